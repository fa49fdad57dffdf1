// The in-browser notebooks (copied to lite/fresh-notebooks.js by tools/build_lite.py), run before the JupyterLite
// app starts. JupyterLite keeps every notebook a student opened and changed in the browser
// (IndexedDB), and that copy wins over the file the site serves: after a site update a returning
// student silently got the old notebook. Each served notebook carries its version
// (metadata.course_site.version, written by build_lite.py); a kept copy of another version is moved
// aside as "<name> (sua cópia anterior).ipynb", so the app opens the current notebook and the
// student's own work is still there, next to it.
const LITE_ROOT = new URL("./", import.meta.url); // lite/ (this file is lite/fresh-notebooks.js)
// JupyterLite's name for its contents store (@jupyterlite/services-extension:default-drive).
const DB_NAME = `JupyterLite Storage - ${LITE_ROOT.pathname}`;
const STORE = "files";
const KEPT_SUFFIX = " (sua cópia anterior)";

const request = (req) => new Promise((resolve, reject) => {
  req.onsuccess = () => resolve(req.result);
  req.onerror = () => reject(req.error);
});

async function servedVersion(path) {
  const response = await fetch(new URL(`files/${path}`, LITE_ROOT), { cache: "no-cache" });
  if (!response.ok) return null; // the student's own notebook: nothing served under that name
  const notebook = await response.json();
  return (notebook.metadata && notebook.metadata.course_site && notebook.metadata.course_site.version) || null;
}

async function moveStaleCopies() {
  const known = indexedDB.databases ? await indexedDB.databases() : [];
  if (!known.some((db) => db.name === DB_NAME)) return; // first visit: nothing kept
  const db = await request(indexedDB.open(DB_NAME));
  try {
    if (!db.objectStoreNames.contains(STORE)) return;
    const keys = await request(db.transaction(STORE).objectStore(STORE).getAllKeys());
    for (const key of keys.filter((k) => typeof k === "string" && k.endsWith(".ipynb") && !k.includes(KEPT_SUFFIX))) {
      const kept = await request(db.transaction(STORE).objectStore(STORE).get(key));
      const content = kept && typeof kept.content === "object" ? kept.content : null;
      const keptVersion = content && content.metadata && content.metadata.course_site
        ? content.metadata.course_site.version : null;
      const current = await servedVersion(key);
      if (current === null || keptVersion === current) continue;
      const aside = key.replace(/\.ipynb$/, `${KEPT_SUFFIX}.ipynb`);
      const store = db.transaction(STORE, "readwrite").objectStore(STORE);
      store.put({ ...kept, path: aside, name: aside.split("/").pop() }, aside);
      await request(store.delete(key));
      console.info(`${key}: the site has a newer version; your copy is kept as ${aside}`);
    }
  } finally {
    db.close();
  }
}

export default moveStaleCopies().catch((error) => console.warn("lite-fresh-notebooks:", error));
