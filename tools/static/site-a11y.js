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
