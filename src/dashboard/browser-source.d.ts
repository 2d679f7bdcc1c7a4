// The page's script is imported as text (Bun's `with { type: "text" }`, embedded by
// `bun build --compile`); it is type-checked on its own against the DOM (browser/tsconfig.json).
declare module "*/browser/dashboard.js" {
  const source: string;
  export default source;
}
