// The visible elements of the page, for the element list of
// click_element: every element with a non-empty box that meets the
// viewport (the W×H top-left corner of the window, its size the
// function's arguments) and is visible, that is interactive or holds text
// of its own.
// Each gets a ref kept in its data-ns-ref attribute, stable for as long as
// the document lives. Options of a drop-down <select> have no box of their
// own; they are listed with their select's. Boxes are clipped to the
// viewport, in CSS pixels (the screenshot's at scale 1).
((W, H) => {
  const MAX = 500, TEXT = 200;
  const interactive = new Set(['A', 'BUTTON', 'INPUT', 'SELECT', 'OPTION', 'TEXTAREA', 'LABEL', 'SUMMARY']);
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);
  if (typeof window.__nsNextRef !== 'number') {
    Object.defineProperty(window, '__nsNextRef', {value: 1, writable: true, enumerable: false});
  }
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const cut = s => s.length > TEXT ? s.slice(0, TEXT) : s;
  const visible = el => el.checkVisibility ? el.checkVisibility({opacityProperty: true, visibilityProperty: true}) : true;
  const out = [];
  const root = document.body || document.documentElement;
  if (!root) return out;
  for (const el of root.querySelectorAll('*')) {
    if (out.length >= MAX) break;
    const tag = el.tagName.toUpperCase();
    if (skip.has(tag)) continue;
    let inter = interactive.has(tag) || el.hasAttribute('onclick') || el.hasAttribute('role') ||
      el.hasAttribute('tabindex') || el.getAttribute('draggable') === 'true' || el.isContentEditable;
    let text = false;
    for (const c of el.childNodes) {
      if (c.nodeType === 3 && c.data.trim() !== '') { text = true; break; }
    }
    if (!inter && !text) continue;
    let r = el.getBoundingClientRect();
    let box = el;
    if (tag === 'OPTION' && (r.width <= 0 || r.height <= 0)) {
      const sel = el.closest('select');
      if (!sel) continue;
      box = sel;
      r = sel.getBoundingClientRect();
    }
    if (r.width <= 0 || r.height <= 0 || r.right <= 0 || r.bottom <= 0 || r.left >= W || r.top >= H) continue;
    if (!visible(box)) continue;
    if (!el.dataset.nsRef) el.dataset.nsRef = String(window.__nsNextRef++);
    const x0 = Math.max(0, Math.round(r.left)), y0 = Math.max(0, Math.round(r.top));
    const x1 = Math.min(W, Math.round(r.right)), y1 = Math.min(H, Math.round(r.bottom));
    if (x1 <= x0 || y1 <= y0) continue;
    const e = {ref: el.dataset.nsRef, tag: tag.toLowerCase(), x: x0, y: y0, w: x1 - x0, h: y1 - y0};
    if (el.id) e.id = el.id;
    const cls = el.getAttribute('class');
    if (cls) e.classes = clean(cls);
    const t = cut(clean(el.innerText !== undefined ? el.innerText : el.textContent));
    if (t) e.text = t;
    if (tag === 'INPUT') {
      e.type = el.type;
      if (el.type === 'checkbox' || el.type === 'radio') e.checked = el.checked;
      else if (el.type !== 'password') e.value = cut(el.value);
      else if (el.value) e.value = '•'.repeat(Math.min(el.value.length, TEXT));
    } else if (tag === 'TEXTAREA' || tag === 'SELECT') {
      e.value = cut(el.value);
    } else if (tag === 'OPTION') {
      e.selected = el.selected;
      if (el.value !== t) e.value = cut(el.value);
    }
    if (el.name) e.name = String(el.name);
    if (el.placeholder) e.placeholder = cut(clean(el.placeholder));
    const href = el.getAttribute('href');
    if (href) e.href = cut(href);
    if (el.disabled === true) e.disabled = true;
    out.push(e);
  }
  return out;
})
