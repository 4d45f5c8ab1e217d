/** hashicorp/hcl v1 compiled to JavaScript. Both functions return their error as the result text. */
declare module 'js-hcl-parser' {
  /** HCL (or JSON) text -> JSON text, or "unable to parse JSON: <error>". */
  export function parse(text: string): string;
  /** JSON text -> HCL text, or "unable to parse HCL: <error>". */
  export function stringify(json: string): string;
}
