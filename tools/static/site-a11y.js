// Every page (added by tools/sphinx_site/assets.py). Keyboard access to wide boxes: a box that scrolls
// (code, cell outputs such as wide pandas tables, display math) needs a tab stop. The theme sets
// them once when the page is parsed and on window resizes, but boxes also change width later (web
// fonts arriving, the layout settling), so watch each box's own size.
document.addEventListener("DOMContentLoaded", () => {
  const BOXES = "pre, .cell_output > .output, div.math > mjx-container, .pst-scrollable-table-container";
  const observer = new ResizeObserver((entries) => {
    for (const { target: box } of entries) {
      if (box.scrollWidth > box.clientWidth || box.scrollHeight > box.clientHeight) box.tabIndex = 0;
    }
  });
  document.querySelectorAll(BOXES).forEach((box) => observer.observe(box));
});

// Printing (and the header's ".pdf" button, which prints the page): the closed dropdowns open for the
// print and close again after it, so a sheet or a saved PDF carries the answers they hold. Browsers with
// ::details-content get the same from site-a11y.css's print rule; this covers the others.
(() => {
  let opened = [];
  window.addEventListener("beforeprint", () => {
    opened = [...document.querySelectorAll("details.sd-dropdown:not([open])")];
    opened.forEach((d) => { d.open = true; });
  });
  window.addEventListener("afterprint", () => {
    opened.forEach((d) => { d.open = false; });
    opened = [];
  });
})();

// sphinx-copybutton 0.5.2 has no Portuguese strings: its buttons were named by an English <title>
// ("Copy to clipboard") with the tooltip "Copy". It reads `messages[locale]` when the page has been
// parsed, after this deferred script has run.
if (typeof messages === "object" && typeof locale === "string") {
  messages["pt-BR"] = {
    copy: "Copiar",
    copy_to_clipboard: "Copiar o código",
    copy_success: "Copiado!",
    copy_failure: "Não foi possível copiar",
  };
  locale = "pt-BR"; // eslint-disable-line no-global-assign
  // Its two icons were written with English <title>s when it loaded ("Copy to clipboard"; after a
  // copy the check mark's "Copied!", then the copy icon again): it swaps the button's content to
  // these strings on every copy, so retitle them (script-scope globals of copybutton.js).
  const retitle = (svg, text) => svg.replace(/<title>[^<]*<\/title>/, `<title>${text}</title>`);
  if (typeof iconCopy === "string") iconCopy = retitle(iconCopy, messages["pt-BR"].copy_to_clipboard); // eslint-disable-line no-global-assign
  if (typeof iconCheck === "string") iconCheck = retitle(iconCheck, messages["pt-BR"].copy_success); // eslint-disable-line no-global-assign
  // The buttons it has already added keep the English <title> (the button's name): name them once
  // it has added them (its own DOMContentLoaded handler ran before this one).
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("button.copybtn").forEach((button) => {
      button.setAttribute("aria-label", messages["pt-BR"].copy_to_clipboard);
      button.querySelectorAll("svg title").forEach((title) => { title.textContent = messages["pt-BR"].copy_to_clipboard; });
    });
  });
}
