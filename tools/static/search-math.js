// Search page only (added by tools/site_ext.py): Sphinx shows each hit's page text, where inline
// math is still in its \( ... \) source form. Typeset the result snippets with the site's MathJax.
document.addEventListener("DOMContentLoaded", () => {
  const results = document.getElementById("search-results");
  if (!results) return;
  let pending = null;
  const typeset = () => {
    pending = null;
    if (!window.MathJax || !MathJax.startup || !MathJax.typesetPromise) return;
    observer.disconnect();
    results.querySelectorAll("p.context").forEach((p) => p.classList.add("mathjax_process"));
    MathJax.startup.promise
      .then(() => MathJax.typesetPromise([results]))
      .finally(() => observer.observe(results, { childList: true, subtree: true }));
  };
  const observer = new MutationObserver(() => {
    if (pending === null) pending = setTimeout(typeset, 50);
  });
  observer.observe(results, { childList: true, subtree: true });
});
