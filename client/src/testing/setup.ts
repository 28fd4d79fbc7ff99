// Every wait in a test is a bound on patience, not an assertion about speed: it ends as soon as
// what it waits for is seen. Testing Library's and Vitest's defaults (1 s per `findBy…`/`waitFor`,
// 5 s per test) are speed assertions on a machine that may be busy: a view's first lazy import is
// transformed on demand, and on a loaded 2-core machine two component tests failed that way.
import { configure } from "@testing-library/dom";

configure({ asyncUtilTimeout: 30_000 });
