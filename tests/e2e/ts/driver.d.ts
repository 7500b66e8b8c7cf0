// What client_driver.ts uses of Node.js beyond examples/typescript/node.d.ts.

interface NodeProcess {
  stdin: unknown;
}

declare module "readline" {
  export interface Interface {
    once(event: "line", listener: (line: string) => void): this;
    close(): void;
  }
  export function createInterface(options: { input: unknown }): Interface;
}
