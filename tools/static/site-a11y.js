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
  // Its icon's <title> (the button's name) was written in English when it loaded: name the buttons
  // once it has added them (its own DOMContentLoaded handler ran before this one).
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("button.copybtn").forEach((button) => {
      button.setAttribute("aria-label", messages["pt-BR"].copy_to_clipboard);
      button.querySelectorAll("svg title").forEach((title) => { title.textContent = messages["pt-BR"].copy_to_clipboard; });
    });
  });
}
