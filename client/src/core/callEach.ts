/** Calls each of a host's listeners with `args`: one that throws stops neither the others nor the
 * widget (a throwing `subscribe` or `chainChanged` listener left every later host request
 * unsettled; an outside review). Its error goes to the console. */
export function callEach<A extends unknown[]>(listeners: Iterable<(...args: A) => void> = [], ...args: A): void {
  for (const l of [...listeners])
    try {
      l(...args);
    } catch (e) {
      console.error(e);
    }
}
