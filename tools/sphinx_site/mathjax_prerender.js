// Build-time math for the site (run by tools/sphinx_site/mathjax.py, never by the reader's browser).
// Reads JSON from stdin: {"fontURL": "...", "formulas": [{"tex": "...", "display": true}, ...]}
// Writes JSON to stdout: {"html": ["<mjx-container ...>", ...], "css": "..."}: one CommonHTML
// rendering per formula (with its MathML for screen readers) and one stylesheet for all of them.
// MathJax comes from the npm package pinned in package-lock.json (node_modules/mathjax).
"use strict";
const path = require("path");

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));

require(path.join(__dirname, "..", "..", "node_modules", "mathjax")).init({
  loader: { load: ["input/tex-full", "output/chtml", "adaptors/liteDOM", "a11y/assistive-mml"] },
  tex: { packages: { "[-]": ["autoload", "require"] } },  // tex-full already holds every package
  chtml: { fontURL: input.fontURL, adaptiveCSS: true, scale: 1.273 },  // = the size MathJax chose in the browser (x-height of the theme's font)
  startup: { typeset: false },
}).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  const html = input.formulas.map(({ tex, display }) =>
    adaptor.outerHTML(MathJax.tex2chtml(tex, { display })));
  const css = adaptor.textContent(MathJax.chtmlStylesheet());
  process.stdout.write(JSON.stringify({ html, css }));
}).catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
