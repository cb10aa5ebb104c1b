// One node's live log. Only the rows in view exist in the DOM (about 40 whatever the log's length); lines
// are fetched by range (pages of 500) as the view needs them, and new lines arrive by long-polling from a
// cursor (the line count the page has), so nothing is sent twice. Follow pauses while the user scrolls up.
import { getBlob, getJson, nodePath, q } from './api.js';
import { el, fmtClock } from './dom.js';
import { classify, parseLine } from './patterns.js';

const LH = 18;            // px per line (style.css .logrow)
const PAGE = 500;         // lines per range request
const MAX_PAGES = 400;    // cached pages (200,000 lines) before the least recently used are dropped
const MAX_H = 15_000_000; // browsers cap an element's height; longer logs map scroll position by ratio

export class LogView {
  constructor({ run, attempt, node }) {
    this.base = nodePath(run, attempt, node);
    this.name = `${run}-attempt${attempt}-node${node}.log`;
    this.total = 0;
    this.pages = new Map();
    this.inflight = new Set();
    this.following = true;
    this.current = -1;        // the line of the current search hit
    this.needle = '';
    this.done = false;
    this.abort = new AbortController();
    this.build();
  }

  build() {
    this.status = el('span', { class: 'logstatus', text: 'loading…' });
    this.followBtn = el('button', { class: 'btn', onclick: () => this.setFollow(!this.following) });
    this.endBtn = el('button', { class: 'btn jump', text: 'Jump to end ↓', onclick: () => this.setFollow(true) });
    this.search = el('input', { class: 'search', type: 'search', placeholder: 'Search log', 'aria-label': 'Search log',
      onkeydown: (e) => { if (e.key === 'Enter') this.find(e.shiftKey ? 'prev' : 'next'); } });
    const bar = el('div', { class: 'logbar' },
      this.followBtn, this.endBtn, this.search,
      el('button', { class: 'btn', text: '↑ Prev', title: 'Previous match (Shift+Enter)', onclick: () => this.find('prev') }),
      el('button', { class: 'btn', text: '↓ Next', title: 'Next match (Enter)', onclick: () => this.find('next') }),
      el('button', { class: 'btn', text: 'First error', onclick: () => this.firstError() }),
      el('button', { class: 'btn', text: 'Download', onclick: () => this.download() }),
      this.status);
    this.spacer = el('div', { class: 'logspacer' });
    this.win = el('div', { class: 'logwin' });
    this.empty = el('div', { class: 'logempty', text: 'No output yet' });
    this.vp = el('div', { class: 'logvp', tabindex: '0' }, this.spacer, this.win, this.empty);
    this.vp.addEventListener('scroll', () => this.onScroll(), { passive: true });
    this.root = el('div', { class: 'logview' }, bar, this.vp);
    new ResizeObserver(() => this.schedule()).observe(this.vp);
    this.setFollow(true);
  }

  // Long-polls only while shown: a browser keeps about six connections per host, so hidden tabs give theirs
  // back and resume from their cursor.
  start() {
    if (this.pollCtl || this.abort.signal.aborted) return this;
    this.pollCtl = new AbortController();
    this.poll(this.pollCtl.signal);
    this.schedule(this.following);
    return this;
  }

  stop() {
    this.pollCtl?.abort();
    this.pollCtl = null;
  }

  destroy() {
    this.stop();
    this.abort.abort();
  }

  // ---- data
  line(i) {
    const p = this.pages.get(Math.floor(i / PAGE));
    return p ? p[i % PAGE] : undefined;
  }

  put(start, lines) {
    for (let k = 0; k < lines.length; k++) {
      const i = start + k, pi = Math.floor(i / PAGE);
      let p = this.pages.get(pi);
      if (!p) {
        p = new Array(PAGE);
        this.pages.set(pi, p);
        if (this.pages.size > MAX_PAGES) this.pages.delete(this.pages.keys().next().value);
      }
      p[i % PAGE] = lines[k];
    }
  }

  async poll(sig) {
    while (!sig.aborted && !this.done) {
      try {
        const from = this.cursor;
        const params = from === undefined ? { tail: PAGE, count: PAGE } : { start: from, count: 5000, wait_ms: 20000 };
        const r = await getJson(`${this.base}/lines?${q(params)}`, { signal: sig });
        this.put(r.start, r.lines);
        this.total = Math.max(this.total, r.total_lines);
        this.cursor = r.start + r.lines.length;
        // Far behind (a burst of output): skip to the end; the range reads fill in what comes into view.
        if (r.total_lines - this.cursor > 20000) this.cursor = r.total_lines;
        this.done = r.done && this.cursor >= r.total_lines;
        this.schedule(this.following);
      } catch (e) {
        if (sig.aborted) return;
        this.status.textContent = `error: ${e.message}`;
        await new Promise((res) => setTimeout(res, 1000));
      }
    }
    if (this.pollCtl && this.pollCtl.signal === sig) this.pollCtl = null;
  }

  async fetchPage(pi) {
    if (this.inflight.has(pi)) return;
    this.inflight.add(pi);
    try {
      const r = await getJson(`${this.base}/lines?${q({ start: pi * PAGE, count: PAGE })}`, { signal: this.abort.signal });
      this.put(r.start, r.lines);
      this.total = Math.max(this.total, r.total_lines);
      this.schedule();
    } catch { /* retried when the view asks again */ } finally {
      this.inflight.delete(pi);
    }
  }

  // ---- geometry
  rows() { return Math.max(1, Math.ceil(this.vp.clientHeight / LH)); }
  virtualHeight() { return Math.min(this.total * LH, MAX_H); }
  scaled() { return this.total * LH > MAX_H; }

  firstLine() {
    const top = this.vp.scrollTop;
    if (!this.scaled()) return { first: Math.floor(top / LH), offset: top % LH };
    const maxScroll = Math.max(1, this.virtualHeight() - this.vp.clientHeight);
    const f = (top / maxScroll) * Math.max(0, this.total - this.rows());
    return { first: Math.floor(f), offset: (f - Math.floor(f)) * LH };
  }

  scrollToLine(i, where = 0.33) {
    const target = Math.max(0, i - Math.floor(this.rows() * where));
    const maxScroll = Math.max(0, this.virtualHeight() - this.vp.clientHeight);
    const top = Math.min(maxScroll, this.scaled() ? (target / Math.max(1, this.total - this.rows())) * maxScroll : target * LH);
    this.vp.scrollTop = top;
    this.autoTop = this.vp.scrollTop;
    this.schedule();
  }

  atEnd() { return this.vp.scrollTop >= this.vp.scrollHeight - this.vp.clientHeight - LH; }

  onScroll() {
    // A scroll to where the view itself last put it is ours; anything else is the user's.
    const user = !(Math.abs(this.vp.scrollTop - this.autoTop) < 1);
    if (user && this.following && !this.atEnd()) this.setFollow(false);
    else if (user && !this.following && this.atEnd() && this.current < 0) this.setFollow(true);
    this.schedule();
  }

  setFollow(on) {
    this.following = on;
    this.followBtn.textContent = on ? '❚❚ Pause' : '▶ Follow';
    this.root?.classList.toggle('paused', !on);
    if (on) this.schedule(true);
  }

  // ---- rendering (at most once per frame)
  schedule(toEnd = false) {
    this.wantEnd ||= toEnd;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      if (this.wantEnd && this.following) {
        this.spacer.style.height = `${this.virtualHeight()}px`;
        this.vp.scrollTop = this.vp.scrollHeight;
        this.autoTop = this.vp.scrollTop;
      }
      this.wantEnd = false;
      this.render();
    });
  }

  render() {
    this.spacer.style.height = `${this.virtualHeight()}px`;
    this.empty.hidden = this.total > 0;
    const { first, offset } = this.firstLine();
    const n = Math.min(this.rows() + 1, Math.max(0, this.total - first));
    this.win.style.transform = `translateY(${this.vp.scrollTop - offset}px)`;
    while (this.win.childElementCount < n) {
      this.win.append(el('div', { class: 'logrow' }, el('span', { class: 'ln' }), el('span', { class: 'ts' }), el('span', { class: 'tx' })));
    }
    while (this.win.childElementCount > n) this.win.lastChild.remove();
    const needle = this.needle.toLowerCase();
    for (let k = 0; k < n; k++) this.renderRow(this.win.children[k], first + k, needle);
    this.status.textContent = `${this.total.toLocaleString('en-US')} lines${this.done ? ' · ended' : ''}`;
    this.root.dataset.total = this.total;
    this.root.dataset.first = first;
  }

  renderRow(row, i, needle) {
    const raw = this.line(i);
    if (raw === undefined) this.fetchPage(Math.floor(i / PAGE));
    const l = raw === undefined ? { time: 0, stream: 'o', text: '…' } : parseLine(raw);
    const kind = raw === undefined ? '' : classify(l.text);
    row.dataset.line = i;
    row.className = `logrow${l.stream === 'e' ? ' stderr' : ''}${kind ? ` ${kind}` : ''}` +
      `${needle && l.text.toLowerCase().includes(needle) ? ' hit' : ''}${i === this.current ? ' current' : ''}`;
    row.children[0].textContent = i + 1;
    row.children[1].textContent = l.time ? fmtClock(l.time) : '';
    row.children[2].textContent = l.text;
  }

  // ---- actions
  async find(dir) {
    this.needle = this.search.value;
    if (!this.needle) return;
    const from = this.current >= 0 ? this.current + (dir === 'next' ? 1 : -1) : dir === 'next' ? this.firstLine().first : this.total - 1;
    let r = await getJson(`${this.base}/find?${q({ q: this.needle, from: Math.max(0, from), dir })}`);
    if (r.line < 0) r = await getJson(`${this.base}/find?${q({ q: this.needle, from: dir === 'next' ? 0 : this.total, dir })}`);
    if (r.line < 0) {
      this.status.textContent = `no match for “${this.needle}”`;
      this.current = -1;
      this.schedule();
      return;
    }
    this.goto(r.line);
  }

  async firstError() {
    const r = await getJson(`${this.base}/find?${q({ kind: 'error', from: 0, dir: 'next' })}`);
    if (r.line < 0) this.status.textContent = 'no error lines';
    else this.goto(r.line);
  }

  goto(line) {
    this.current = line;
    this.setFollow(false);
    this.scrollToLine(line);
  }

  async download() {
    const blob = await getBlob(`${this.base}/download`);
    const a = el('a', { href: URL.createObjectURL(blob), download: this.name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }
}
