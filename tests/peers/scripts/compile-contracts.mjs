// Compiles tests/peers/contracts/*.sol with solc-js (offline: the compiler is the npm package)
// and writes one artifact per contract, <Name>.json, next to its source: ABI, creation and
// runtime bytecode, the compiler version and the SHA-256 of the source it came from. The Rust
// tests load the artifacts (alloy's `sol!` reads `abi` and `bytecode`) and check the hash, so an
// edited source with a stale artifact fails the tests. Imports (`@openzeppelin/contracts/...`) are
// read from this package's node_modules; a contract that imports records the versions it was
// built with.
//
//   node scripts/compile-contracts.mjs          regenerate the artifacts
//   node scripts/compile-contracts.mjs --check  exit 1 if an artifact differs from a fresh build
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const here = dirname(fileURLToPath(import.meta.url));
const contractsDir = join(here, "..", "contracts");
const nodeModules = join(here, "..", "node_modules");

// solc's import callback: package imports from node_modules, nothing outside it.
function findImports(path) {
  const file = resolve(nodeModules, path);
  if (!file.startsWith(nodeModules + "/") || !existsSync(file)) return { error: `not found: ${path}` };
  return { contents: readFileSync(file, "utf8") };
}

// "@openzeppelin/contracts/token/..." -> { "@openzeppelin/contracts": "5.7.0" }
function importedPackages(content) {
  const packages = {};
  for (const [, spec] of content.matchAll(/import\s[^"']*["'](@[^/"']+\/[^/"']+)\//g)) {
    packages[spec] = JSON.parse(readFileSync(join(nodeModules, spec, "package.json"), "utf8")).version;
  }
  return packages;
}
const check = process.argv.includes("--check");

const sources = readdirSync(contractsDir).filter((f) => f.endsWith(".sol")).sort();
let stale = 0;
for (const file of sources) {
  const content = readFileSync(join(contractsDir, file), "utf8");
  const input = {
    language: "Solidity",
    sources: { [file]: { content } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
  const packages = importedPackages(content);
  const errors = (output.errors || []).filter((e) => e.severity === "error");
  for (const e of output.errors || []) console.error(e.formattedMessage);
  if (errors.length > 0) process.exit(1);

  for (const [name, contract] of Object.entries(output.contracts[file])) {
    const artifact = {
      contractName: name,
      sourceName: `contracts/${file}`,
      sourceSha256: createHash("sha256").update(content).digest("hex"),
      compiler: `solc-js ${solc.version()}`,
      settings: { optimizer: input.settings.optimizer, evmVersion: input.settings.evmVersion },
      ...(Object.keys(packages).length > 0 ? { imports: packages } : {}),
      generatedBy: "tests/peers/scripts/compile-contracts.mjs (do not edit by hand)",
      abi: contract.abi,
      bytecode: `0x${contract.evm.bytecode.object}`,
      deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
    };
    const text = `${JSON.stringify(artifact, null, 2)}\n`;
    const out = join(contractsDir, `${name}.json`);
    if (check) {
      if (!existsSync(out) || readFileSync(out, "utf8") !== text) {
        console.error(`stale artifact: ${out}`);
        stale += 1;
      }
    } else {
      writeFileSync(out, text);
      console.log(`wrote ${out}`);
    }
  }
}
if (stale > 0) process.exit(1);
