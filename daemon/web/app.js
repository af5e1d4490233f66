/* qual's dashboard: the index, job and history pages (daemon/web/*.html),
 * served by quald --http. Plain JS, no library, nothing from the network:
 * the pages read quald's HTTP API (the JSON of docs/protocol.md and the
 * lines of docs/output.md) and draw their plots as SVG.
 *
 * Hooks for tests (tests/tools/browser_test.py), kept stable:
 *   index:   tr[data-job=ID][data-state=S] in #jobs
 *   job:     body[data-lines] (lines taken), #job-state, #job-verdict,
 *            .case[data-case=NAME][data-pairs=N] (pairs drawn),
 *            [data-code-case=NAME] in it once its code line came, with
 *            tr[data-code-row=FIELD] (.changed when both arms have the
 *            figure and it differs) of td[data-code-field=FIELD]
 *            [data-arm=baseline|candidate|change] (the text shown;
 *            data-value the line's value, for change the difference, absent
 *            when none); FIELD is code_bytes, instructions, registers,
 *            spill_stores, spill_loads, local_bytes, shared_bytes,
 *            occupancy (the fraction), blocks_per_sm, warps_per_sm,
 *            limited_by or mix.CLASS; [data-code-error] the disassembler's
 *            error; details[data-code-diff] > pre > span.d-add|d-del|d-hunk|
 *            d-ctx, one span for each run of lines of a kind, text only,
 *            tr[data-case-row=NAME][data-verdict=V] with td[data-change]
 *            in #verdict-table, [data-forest-case=NAME] once its
 *            case_verdict came, body[data-done] after the verdict line
 *   history: .plot-card[data-case=NAME] with one [data-point] per job,
 *            tr.hist-row in #history-table, body[data-ready] when drawn */
'use strict';

(function () {
	const SVGNS = 'http://www.w3.org/2000/svg';

	/* ---- small helpers ------------------------------------------------ */

	/* An element with attributes and children (strings become text). */
	function el(tag, attrs, ...children) {
		const e = document.createElement(tag);
		setAttrs(e, attrs);
		append(e, children);
		return e;
	}

	function sv(tag, attrs, ...children) {
		const e = document.createElementNS(SVGNS, tag);
		setAttrs(e, attrs);
		append(e, children);
		return e;
	}

	function setAttrs(e, attrs) {
		for (const k in attrs || {}) {
			const v = attrs[k];
			if (v === null || v === undefined || v === false)
				continue;
			if (k === 'text')
				e.textContent = v;
			else
				e.setAttribute(k, v === true ? '' : String(v));
		}
	}

	function append(e, children) {
		for (const c of children.flat()) {
			if (c === null || c === undefined || c === false)
				continue;
			e.append(c instanceof Node ? c : document.createTextNode(String(c)));
		}
	}

	function $(id) { return document.getElementById(id); }

	function isNum(x) { return typeof x === 'number' && isFinite(x); }

	/* The job line a server-sent event carries: an object, or null. */
	function eventLine(ev) {
		try {
			const line = JSON.parse(ev.data);

			return line && typeof line === 'object' ? line : null;
		} catch (e) {
			return null;
		}
	}

	/* "+1.23%" for a ratio, as qual-view's change_text(); "-" when the
	 * ratio is not a finite positive number. */
	function pct(r) {
		if (!isNum(r) || !(r > 0))
			return '-';
		const s = (100 * (r - 1)).toFixed(2);
		return (s[0] === '-' ? s : '+' + s) + '%';
	}

	/* printf's %.Ng: N significant digits, trailing zeros dropped,
	 * exponent form below 1e-4 or from 10^N. "-" for no number. */
	function fmtG(x, n) {
		if (!isNum(x))
			return '-';
		if (x === 0)
			return '0';
		const e = Math.floor(Math.log10(Math.abs(x)));
		let s;
		if (e < -4 || e >= n) {
			s = x.toExponential(n - 1).replace(/\.?0+e/, 'e');
			s = s.replace(/e([+-])(\d)$/, 'e$10$2');
		} else {
			s = x.toFixed(Math.max(0, n - 1 - e));
			if (s.indexOf('.') >= 0)
				s = s.replace(/\.?0+$/, '');
		}
		return s;
	}

	function basename(p) {
		if (typeof p !== 'string')
			return '-';
		const i = p.lastIndexOf('/');
		return i >= 0 ? p.slice(i + 1) : p;
	}

	function median(xs) {
		const a = xs.slice().sort((x, y) => x - y);
		const n = a.length;
		return n % 2 ? a[(n - 1) / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
	}

	function quantile(sorted, q) {
		if (!sorted.length)
			return NaN;
		const i = Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))));
		return sorted[i];
	}

	/* A UTC time as the API gives it, "2026-12-03T13:46:21Z", shown as
	 * "2026-12-03 13:46:21": not converted to local time. */
	function utc(t) {
		if (typeof t !== 'string' || !t)
			return '-';
		return t.replace('T', ' ').replace(/Z$/, '');
	}

	function verdictBadge(v, extra) {
		return el('span', {class: 'badge v-' + (v || 'none'), text: (v || '?') + (extra || '')});
	}

	/* The Slurm backend's: a job's GPU type and node as a chip, with its
	 * submission's overall verdict over all its GPU types (quald's
	 * "overall": null while one of them runs), and Slurm's reason beside a
	 * state (queued in Slurm: Resources). */
	function fleetChip(j) {
		const s = j.slurm || {};
		if (!j.gpu_type && !s.node && !j.submission)
			return '';
		const text = (j.gpu_type || 'gpu') + (s.node ? ' @ ' + s.node : '');
		const chip = el('span', {class: 'chip', title: 'Slurm job ' + (s.id || '?'), text});
		if (!j.submission)
			return chip;
		return el('span', {}, chip, ' ', el('span', {class: 'chip', title: 'submission ' + j.submission,
			text: 'overall '}, j.overall ? verdictBadge(j.overall) : el('span', {class: 'note', text: 'pending'})));
	}
	function stateText(j) {
		const s = j.slurm || {};
		return j.state + (j.state === 'queued' && s.reason ? ' (Slurm: ' + s.reason + ')' : '');
	}

	function labelChips(labels) {
		const box = el('span', {class: 'chips'});
		for (const k of Object.keys(labels || {}).sort())
			box.append(el('span', {class: 'chip', title: k + '=' + labels[k]},
				      el('b', {text: k}), '=' + labels[k]));
		return box;
	}

	function jobLink(id) {
		return el('a', {href: '/jobs/' + encodeURIComponent(id), class: 'mono', text: id});
	}

	function showError(msg) {
		const b = $('error');
		if (!b)
			return;
		b.textContent = msg;
		b.hidden = false;
	}

	function clearError() {
		const b = $('error');
		if (b)
			b.hidden = true;
	}

	/* GET a JSON document; an HTTP error rejects with the body's "error"
	 * when it has one (quald's 404 says which job it does not know). */
	async function getJSON(url) {
		let r;
		try {
			r = await fetch(url, {cache: 'no-store', headers: {Accept: 'application/json'}});
		} catch (e) {
			throw new Error('cannot reach quald for ' + url + ': ' + e.message);
		}
		let body = null;
		try {
			body = await r.json();
		} catch (e) {
			body = null;
		}
		if (!r.ok) {
			const why = body && typeof body.error === 'string' ? body.error : 'HTTP ' + r.status;
			const err = new Error(why);
			err.status = r.status;
			throw err;
		}
		if (body === null)
			throw new Error('quald answered ' + url + ' with no JSON');
		return body;
	}

	function setLive(state, text) {
		const l = $('live');
		if (!l)
			return;
		l.className = 'live ' + state;
		l.textContent = text;
	}

	/* ---- scales and axes --------------------------------------------- */

	/* A nice step for about n ticks over span. */
	function niceStep(span, n) {
		const raw = span / Math.max(1, n);
		const p = Math.pow(10, Math.floor(Math.log10(raw)));
		const m = raw / p;
		return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
	}

	function linearTicks(lo, hi, n) {
		if (!(hi > lo))
			return [lo];
		const step = niceStep(hi - lo, n);
		const out = [];
		for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
			out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
		return out;
	}

	/* Ratios are drawn on a log scale, so that 2x slower and 2x faster lie
	 * as far from 1 and a 20x slowdown does not flatten the cases near 1;
	 * ticks are labelled as change in percent. Returns [ratio, label]. */
	function ratioTicks(lo, hi, n) {
		if (hi / lo < 3) {
			const t = linearTicks(100 * (lo - 1), 100 * (hi - 1), n);
			const step = t.length > 1 ? t[1] - t[0] : 1;
			const dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
			return t.map(p => [1 + p / 100, (p > 0 ? '+' : '') + p.toFixed(dec) + '%']);
		}
		const out = [];
		for (let k = -6; k <= 6; k++)
			for (const m of [1, 2, 5]) {
				const r = m * Math.pow(10, k);
				if (r >= lo && r <= hi)
					out.push([r, r >= 1 ? (r === 1 ? '0%' : '×' + fmtG(r, 3)) : '×' + fmtG(r, 3)]);
			}
		return out;
	}

	/* A log-ratio scale over [lo, hi] onto [a, b]. */
	function logScale(lo, hi, a, b) {
		const l0 = Math.log(lo), l1 = Math.log(hi);
		return r => a + (Math.log(r) - l0) / (l1 - l0) * (b - a);
	}

	/* Widens [lo, hi] (ratios) by a fraction of its log span each side. */
	function padRatio(lo, hi, f) {
		const l0 = Math.log(lo), l1 = Math.log(hi), d = Math.max(l1 - l0, 1e-4) * f;
		return [Math.exp(l0 - d), Math.exp(l1 + d)];
	}

	/* The ratios a plot spans: around 1 and the margin, and when some of
	 * the values lie within 25% (or ten margins) of 1 and others far
	 * beyond (a 20x slowdown among cases near 1), only the near ones, so
	 * that the far ones do not flatten the rest: those are drawn at the
	 * edge with their value. clipped says whether any lies outside. */
	function robustDomain(vals, m) {
		const v = vals.filter(x => isNum(x) && x > 0);
		const cap = Math.max(0.25, 10 * m);
		const core = v.filter(x => x >= 1 / (1 + cap) && x <= 1 + cap);
		const use = core.length && core.length < v.length ? core : v;
		const lo = Math.min(1 - 1.5 * m, 0.999, ...use), hi = Math.max(1 + 1.5 * m, 1.001, ...use);
		return {lo, hi, clipped: use !== v};
	}

	/* A triangle pointing out of the plot at (x, y), up or down. */
	function edgeMark(x, y, up, r) {
		const d = up ? -1 : 1;
		return sv('path', {class: 'mark', d: 'M' + (x - r) + ' ' + y + 'L' + (x + r) + ' ' + y + 'L' + x + ' ' + (y + d * 1.6 * r) + 'Z'});
	}

	function edgeMarkX(x, y, right, r) {
		const d = right ? 1 : -1;
		return sv('path', {class: 'mark', d: 'M' + x + ' ' + (y - r) + 'L' + x + ' ' + (y + r) + 'L' + (x + d * 1.6 * r) + ' ' + y + 'Z'});
	}

	/* ---- index page -------------------------------------------------- */

	function initIndex() {
		const progress = new Map();   /* job -> text, from /api/events */
		let refreshTimer = null, known = new Set();

		async function refresh() {
			refreshTimer = null;
			try {
				const [status, list] = await Promise.all([
					getJSON('/api/status'), getJSON('/api/jobs?limit=50')]);
				clearError();
				drawStatus(status);
				drawJobs(list.jobs || []);
			} catch (e) {
				showError('cannot load the jobs: ' + e.message);
			}
		}

		function soon() {
			if (!refreshTimer)
				refreshTimer = setTimeout(refresh, 250);
		}

		function drawStatus(s) {
			$('version').textContent = s.version ? 'quald ' + s.version : '';
			const tb = $('slots').tBodies[0];
			tb.replaceChildren();
			for (const slot of s.slots || []) {
				let health;
				if (slot.out_of_service)
					health = el('span', {class: 'v-fail', text: 'out of service: ' + slot.out_of_service});
				else if (slot.health_check)
					health = el('span', {class: 'v-inconclusive', text: 'health check running'});
				else
					health = el('span', {class: 'v-faster', text: 'in service'});
				tb.append(el('tr', {'data-slot': slot.slot},
					el('td', {class: 'num', text: slot.slot}),
					el('td', {text: slot.device === null || slot.device === undefined ?
						'no GPU (compile only)' : 'GPU ' + slot.device}),
					el('td', {}, slot.job ? jobLink(slot.job) : el('span', {class: 'note', text: 'idle'})),
					el('td', {class: 'wrap'}, health)));
			}
			if (!(s.slots || []).length)
				tb.append(el('tr', {class: 'empty'}, el('td', {colspan: 4, text: 'no slots'})));
			const w = $('waiting');
			w.hidden = !s.waiting;
			w.textContent = s.waiting || '';
			const q = $('queue');
			q.replaceChildren();
			if (!(s.queued || []).length)
				q.append(el('span', {class: 'note', text: 'empty'}));
			(s.queued || []).forEach((id, i) => q.append(el('span', {}, (i + 1) + '. ', jobLink(id)), ' '));
		}

		function drawJobs(jobs) {
			const tb = $('jobs').tBodies[0];
			tb.replaceChildren();
			known = new Set(jobs.map(j => j.job));
			for (const j of jobs) {
				const prog = j.state === 'running' ? progress.get(j.job) || '' :
					j.state === 'queued' ? 'waiting' : '';
				tb.append(el('tr', {'data-job': j.job, 'data-state': j.state},
					el('td', {}, jobLink(j.job)),
					el('td', {class: 'v-' + j.state, text: stateText(j)}),
					el('td', {}, j.verdict ? verdictBadge(j.verdict) : el('span', {class: 'note', text: '-'})),
					el('td', {class: 'note progress-cell wrap', text: prog}),
					el('td', {class: 'mono', text: utc(j.submitted)}),
					el('td', {class: 'mono', text: utc(j.finished)}),
					el('td', {class: 'wrap'}, fleetChip(j), labelChips(j.labels)),
					el('td', {class: 'wrap files', title: j.baseline || '', text: basename(j.baseline)}),
					el('td', {class: 'wrap files', title: j.candidate || '', text: basename(j.candidate)})));
			}
			if (!jobs.length)
				tb.append(el('tr', {class: 'empty'}, el('td', {colspan: 9, text: 'no jobs yet'})));
		}

		/* What a running job is doing, from its latest line. */
		const cursor = new Map();   /* job -> {ncases, index, name, pairs} */
		function track(line) {
			const id = line.job;
			let c = cursor.get(id);
			if (!c) {
				c = {ncases: 0, index: 0, name: '', pairs: 0, session: 0};
				cursor.set(id, c);
			}
			if (line.type === 'start') {
				c.ncases = ((line.settings || {}).cases || []).length;
			} else if (line.type === 'case') {
				c.index++;
				c.name = line.case;
				c.pairs = 0;
			} else if (line.type === 'pair') {
				if (line.case !== c.name || (line.session || 0) !== c.session) {
					c.name = line.case;
					c.session = line.session || 0;
					c.pairs = 0;
				}
				c.pairs++;
			}
			let text = !c.name ? 'started' : c.session > 1 ? 'session ' + c.session + ': ' + c.name :
				'case ' + c.index + (c.ncases ? '/' + c.ncases : '') + ' ' + c.name;
			if (c.pairs)
				text += ', ' + c.pairs + ' pair' + (c.pairs === 1 ? '' : 's');
			if (line.type === 'case_verdict')
				text = 'judging';
			progress.set(id, text);
			const cell = document.querySelector('#jobs tr[data-job="' + CSS.escape(id) + '"] .progress-cell');
			if (cell)
				cell.textContent = text;
		}

		refresh();
		/* A submit writes no line until its job starts: a slow poll shows
		 * new queued jobs, the events everything else at once. */
		setInterval(soon, 10000);
		const es = new EventSource('/api/events');
		es.onopen = () => {
			setLive('on', 'live');
			soon();   /* after a reconnect, lines may have been missed */
		};
		es.onerror = () => setLive('off', 'reconnecting');
		es.onmessage = ev => {
			const line = eventLine(ev);

			if (!line)
				return;
			track(line);
			if (line.type === 'start' || line.type === 'verdict' || !known.has(line.job))
				soon();
		};
	}

	/* ---- job page ---------------------------------------------------- */

	const STATIC_DELTAS = [
		['code_bytes_delta', 'size', ' B'], ['registers_delta', 'regs', ''],
		['spill_stores_delta', 'spill st', ''], ['spill_loads_delta', 'spill ld', ''],
		['stack_bytes_delta', 'stack', ' B'],
	];

	/* The code column of qual-view's summary: identical, the nonzero
	 * static differences, or "differs". */
	function codeCell(cv, caseLine) {
		if (typeof cv.identical_code !== 'boolean' || cv.verdict === 'not_applicable')
			return '-';
		if (cv.identical_code)
			return 'identical';
		const st = (caseLine && caseLine.static) || {};
		const parts = [];
		for (const [k, what, unit] of STATIC_DELTAS) {
			const d = st[k];
			if (Number.isInteger(d) && d !== 0)
				parts.push(what + ' ' + (d > 0 ? '+' : '') + d + unit);
		}
		return parts.length ? parts.join(', ') : 'differs';
	}

	/* Timed and not failed: a ratio to show and to count in the geomean. */
	function countsInGeomean(cv) {
		const v = cv.verdict;
		return !!v && v !== 'fail' && v !== 'not_timed' && v !== 'not_applicable' &&
			isNum(cv.ratio_median) && cv.ratio_median > 0;
	}

	function changeCell(cv) {
		if (!countsInGeomean(cv))
			return '-';
		const a = pct(cv.ratio_median);
		if ('ratio_lo' in cv)
			return a + ' [' + pct(cv.ratio_lo) + ', ' + pct(cv.ratio_hi) + ']';
		return a;
	}

	/* ---- what the compilers made of a case: its code line -------------- */

	/* The figures of a code line's arms, in `qualctl explain`'s order:
	 * [field, label, kind]; kind int, fraction (shown in percent) or word. */
	const CODE_FIGURES = [
		['code_bytes', 'code bytes', 'int'], ['instructions', 'instructions', 'int'],
		['registers', 'registers per thread', 'int'], ['spill_stores', 'spill stores (bytes)', 'int'],
		['spill_loads', 'spill loads (bytes)', 'int'], ['local_bytes', 'local memory (bytes)', 'int'],
		['shared_bytes', 'static shared (bytes)', 'int'],
		['occupancy', 'occupancy', 'fraction'], ['blocks_per_sm', 'blocks per SM', 'int'],
		['warps_per_sm', 'warps per SM', 'int'], ['limited_by', 'limited by', 'word'],
	];
	const MIX_LABELS = {
		mma: 'tensor-core MMA', global: 'global memory', shared: 'shared memory',
		local: 'local memory', convert: 'conversions', branch: 'branches',
		barrier: 'barriers', other: 'other',
	};

	/* An arm's value of a figure: occupancy's are in its own object. */
	function codeFigure(arm, field) {
		const a = arm && typeof arm === 'object' ? arm : {};
		const o = a.occupancy && typeof a.occupancy === 'object' ? a.occupancy : {};
		if (field === 'occupancy')
			return o.fraction;
		if (field === 'blocks_per_sm' || field === 'warps_per_sm' || field === 'limited_by')
			return o[field];
		if (field.startsWith('mix.'))
			return (a.mix && typeof a.mix === 'object' ? a.mix : {})[field.slice(4)];
		return a[field];
	}

	function codeKnown(v, kind) {
		return kind === 'int' ? Number.isInteger(v) : kind === 'fraction' ? isNum(v) : typeof v === 'string';
	}

	function codeText(v, kind) {
		if (!codeKnown(v, kind))
			return '-';
		return kind === 'fraction' ? fmtG(100 * v, 4) + '%' : String(v);
	}

	/* The change column: the difference (and for counts its share of the
	 * baseline's, as qualctl explain prints it), '' when the same or
	 * unknown. [text, raw difference or null]. */
	function codeChange(b, k, kind) {
		if (!codeKnown(b, kind) || !codeKnown(k, kind) || b === k)
			return ['', null];
		if (kind === 'word')
			return [b + ' → ' + k, null];
		const d = k - b, sign = x => (x > 0 ? '+' : '');
		if (kind === 'fraction')
			return [sign(d) + fmtG(100 * d, 3) + ' points', d];
		return [sign(d) + d + (b > 0 ? ' (' + sign(d) + (100 * d / b).toFixed(1) + '%)' : ''), d];
	}

	/* One figure's row: tr[data-code-row=FIELD], .changed when both arms
	 * have it and it differs; each cell td[data-code-field][data-arm] with
	 * the raw value in data-value. */
	function codeRow(line, field, label, kind) {
		const b = codeFigure(line.baseline, field), k = codeFigure(line.candidate, field);
		const [change, d] = codeChange(b, k, kind);
		const cell = (arm, v, text) => el('td', {'data-code-field': field, 'data-arm': arm,
			'data-value': v === null || v === undefined ? null : String(v), text});
		return el('tr', {'data-code-row': field, class: change ? 'changed' : null},
			el('td', {text: label}), cell('baseline', b, codeText(b, kind)),
			cell('candidate', k, codeText(k, kind)), cell('change', d, change));
	}

	/* The classes of the instruction mix: the baseline's, then any only
	 * the candidate has. */
	function mixClasses(line) {
		const keys = [];
		for (const arm of [line.baseline, line.candidate]) {
			const m = arm && arm.mix && typeof arm.mix === 'object' ? arm.mix : {};
			for (const k of Object.keys(m))
				if (!keys.includes(k))
					keys.push(k);
		}
		return keys;
	}

	/* The diff of the two normalised listings, line by line coloured by
	 * its first character. It is a compiler's output: it becomes text
	 * nodes only, never markup. Runs of lines of one kind share a span. */
	function diffBlock(d) {
		const lines = String(d.text).split('\n');
		if (lines.length && lines[lines.length - 1] === '')
			lines.pop();
		const pre = el('pre', {class: 'diff'});
		let kind = null, run = [];
		const flush = () => {
			if (run.length)
				pre.append(el('span', {class: 'd-' + kind, text: run.join('\n')}));
			run = [];
		};
		for (const s of lines) {
			const k = s[0] === '+' ? 'add' : s[0] === '-' ? 'del' : s[0] === '@' ? 'hunk' : 'ctx';
			if (k !== kind)
				flush();
			kind = k;
			run.push(s);
		}
		flush();
		const n = x => Number.isInteger(x) ? x : '?';
		return el('details', {class: 'code-diff', 'data-code-diff': ''},
			el('summary', {text: 'diff of the disassemblies: ' + n(d.added) + ' lines added, ' + n(d.removed) +
				' removed' + (d.coarse ? ', too large to match line by line' : '') +
				(d.truncated ? '; cut short in the job\'s line' : '')}),
			el('p', {class: 'note', text: 'registers and labels renamed in order of first use'}),
			pre);
	}

	/* A case's code line: both arms' figures side by side with the
	 * change, the instruction mix, the disassembler's error and the diff. */
	function codeBlock(line) {
		const tool = line.disassembler && typeof line.disassembler === 'object' ? line.disassembler : null;
		const where = [line.target || '?', isNum(line.block_threads) ? line.block_threads + ' threads a block' : '',
			line.dynamic_shared_bytes > 0 ? line.dynamic_shared_bytes + ' B dynamic shared' : ''].filter(Boolean).join(', ');
		const head = el('div', {class: 'code-head'},
			el('span', {class: 'code-word', text: 'code ' + (line.identical_code ? 'identical in both arms' : 'differs')}),
			' · ' + where,
			line.occupancy_limits ? '' : ' · no occupancy: no limits known for this target',
			tool ? el('span', {title: tool.path || '', text: ' · ' + (tool.tool || '?') + ' ' + (tool.version || '')}) : '');
		const head3 = () => el('tr', {}, el('th'), el('th', {text: 'baseline'}), el('th', {text: 'candidate'}), el('th', {text: 'change'}));
		const figures = el('table', {class: 'arms code-figures'}, head3());
		for (const [field, label, kind] of CODE_FIGURES)
			figures.append(codeRow(line, field, label, kind));
		const tables = el('div', {class: 'code-tables'}, figures);
		const classes = mixClasses(line);
		if (classes.length) {
			const mix = el('table', {class: 'arms code-figures code-mix'}, head3());
			mix.rows[0].cells[0].textContent = 'instruction mix';
			for (const k of classes)
				mix.append(codeRow(line, 'mix.' + k, MIX_LABELS[k] || k, 'int'));
			tables.append(mix);
		}
		const d = line.diff && typeof line.diff === 'object' ? line.diff : null;
		return [head,
			typeof line.disassembly_error === 'string' ?
				el('div', {class: 'case-error', 'data-code-error': '', text: 'no disassembly: ' + line.disassembly_error}) : '',
			tables,
			d && d.text ? diffBlock(d) : d ? el('p', {class: 'note', text: 'the disassemblies do not differ'}) : ''];
	}

	function initJob() {
		const parts = location.pathname.split('/').filter(Boolean);
		const id = decodeURIComponent(parts[1] || '');
		const J = {
			id, state: '', labels: {}, start: null, verdict: null, nlines: 0, lastSeq: -1,
			cases: new Map(), errors: [], margin: null, ncases: 0, caseIndex: 0,
			current: '', dirty: new Set(), all: true, timer: null, es: null,
		};
		$('job-id').textContent = 'job ' + id;
		document.title = 'qual: job ' + id;

		function caseOf(name) {
			let c = J.cases.get(name);
			if (!c) {
				c = {name, line: null, cv: null, code: null, codeShown: null, pairs: [], byKey: new Map(),
				     errors: [], dom: null};
				J.cases.set(name, c);
				makeCaseDom(c);
			}
			return c;
		}

		function take(line) {
			if (!line || typeof line !== 'object')
				return;
			if (Number.isInteger(line.seq)) {
				if (line.seq <= J.lastSeq)
					return;   /* seen already: the stream repeats what the fetch gave */
				J.lastSeq = line.seq;
			}
			J.nlines++;
			document.body.dataset.lines = String(J.nlines);
			switch (line.type) {
			case 'start':
				J.start = line;
				J.margin = isNum((line.settings || {}).margin) ? line.settings.margin : null;
				J.ncases = ((line.settings || {}).cases || []).length;
				if (!J.state || J.state === 'queued')
					J.state = 'running';
				J.all = true;
				break;
			case 'case': {
				const c = caseOf(line.case);
				c.line = line;
				J.caseIndex++;
				J.current = line.case;
				J.dirty.add(c);
				break;
			}
			case 'pair': {
				const c = caseOf(line.case);
				const b = line.baseline_ns, k = line.candidate_ns;
				const ok = isNum(b) && isNum(k) && b > 0 && k > 0;
				const p = {x: line.pair, block: line.block, retake: line.retake || 0,
					   session: line.session || 0, b, k, r: ok ? k / b : NaN, excluded: false};
				/* A retake's pair replaces the attempt it retakes. */
				const key = (line.session || 0) + ':' + line.pair;
				const old = c.byKey.get(key);
				if (old !== undefined && p.retake > 0)
					c.pairs[old] = p;
				else {
					c.byKey.set(key, c.pairs.length);
					c.pairs.push(p);
				}
				J.current = line.case;
				J.dirty.add(c);
				break;
			}
			case 'block':
				if (line.throttled) {
					const c = caseOf(line.case);
					for (const p of c.pairs)
						if (p.block === line.block && p.retake === (line.retake || 0) &&
						    p.session === (line.session || 0))
							p.excluded = true;
					J.dirty.add(c);
				}
				break;
			case 'error':
				J.errors.push(line);
				if (line.case)
					J.dirty.add(caseOf(line.case));
				J.all = true;
				break;
			case 'code': {
				/* What the compilers made of the case: after the
				 * compile phase, before or after its case line. */
				const c = caseOf(line.case);
				c.code = line;
				J.dirty.add(c);
				break;
			}
			case 'case_verdict': {
				const c = caseOf(line.case);
				c.cv = line;
				J.dirty.add(c);
				J.all = true;
				break;
			}
			case 'verdict':
				J.verdict = line;
				/* A job that ended while the page watched: its state as
				 * quald names it (docs/protocol.md, "Job states"); a job
				 * loaded finished keeps the state quald gave. */
				if (!J.state || J.state === 'queued' || J.state === 'running')
					J.state = line.verdict === 'cancelled' || line.verdict === 'interrupted' ?
						line.verdict : 'done';
				J.all = true;
				break;
			default:
				break;   /* newer line types: nothing to show */
			}
			schedule();
		}

		/* Draws at most every 200 ms: a job sends thousands of pairs. */
		function schedule() {
			if (!J.timer)
				J.timer = setTimeout(render, 200);
		}

		function render() {
			clearTimeout(J.timer);
			J.timer = null;
			for (const c of J.dirty)
				renderCase(c);
			J.dirty.clear();
			renderProgress();
			if (J.all) {
				J.all = false;
				renderHead();
				renderTable();
				renderForest();
				renderErrors();
			}
		}

		function renderHead() {
			const st = $('job-state');
			st.textContent = J.state || '?';
			st.className = 'badge v-' + (J.state || 'none');
			const vb = $('job-verdict');
			if (J.verdict) {
				vb.textContent = J.verdict.verdict || '?';
				vb.className = 'badge v-' + (J.verdict.verdict || 'none');
				document.body.dataset.done = '1';
			}
			const lab = $('job-labels');
			lab.replaceChildren(...(J.fleet ? [fleetChip(J.fleet)] : []), labelChips(J.labels));
			const dl = $('job-facts');
			dl.replaceChildren();
			const fact = (k, ...v) => dl.append(el('dt', {text: k}), el('dd', {}, ...v));
			const s = J.start;
			if (!s) {
				fact('started', J.verdict ? 'never: the job ended before its run started' :
				     J.state === 'queued' ? 'not yet: the job is queued' : 'no start line yet');
				return;
			}
			const ident = a => a ? [(a.abi || '?') + ' ' + (a.version || '?') + ' ',
				el('code', {text: a.path || '?', title: a.real_path || ''}),
				a.sha256 ? el('span', {class: 'note', title: a.sha256, text: ' sha256 ' + a.sha256.slice(0, 12)}) : '',
				(a.options || []).length ? el('span', {class: 'note', text: ' options ' + a.options.join(' ')}) : ''] : ['?'];
			fact('baseline', ...ident(s.baseline));
			fact('candidate', ...ident(s.candidate));
			const d = s.device;
			if (d && typeof d === 'object')
				fact('device', (d.name || '?') + ' (' + [d.arch, d.driver ? 'driver ' + d.driver : '',
					isNum(d.ordinal) ? 'GPU ' + d.ordinal : '', d.pci_bus_id || ''].filter(Boolean).join(', ') + ')');
			else
				fact('device', 'none: not timed' + (s.not_timed_because ? ' (' + s.not_timed_because + ')' : ''));
			fact('target', s.arch || '?');
			fact('started', el('span', {class: 'mono', text: utc(s.time)}),
			     s.version ? el('span', {class: 'note', text: '  ' + (s.tool || '') + ' ' + s.version + ', schema ' + s.schema_version}) : '');
			const g = s.settings || {};
			const bits = [];
			/* The timing settings say nothing of a run not timed. */
			if (s.timed === false)
				bits.push(g.compile_only ? 'compile only' : 'not timed');
			else if (isNum(g.pairs))
				bits.push(g.pairs + ' pairs' + (isNum(g.max_pairs) && g.max_pairs > g.pairs ? ' (up to ' + g.max_pairs + ')' : ''));
			if (isNum(g.pairs_per_block) && s.timed !== false)
				bits.push(g.pairs_per_block + ' a block');
			if (isNum(g.sessions) && s.timed !== false)
				bits.push(g.sessions + ' session' + (g.sessions === 1 ? '' : 's'));
			if (isNum(g.margin))
				bits.push('margin ' + fmtG(100 * g.margin, 3) + '%');
			if (isNum(g.alpha))
				bits.push('alpha ' + g.alpha);
			if (isNum(g.conf))
				bits.push('conf ' + g.conf);
			if (g.gate_slower)
				bits.push('gate slower ' + g.gate_slower + ', faster ' + g.gate_faster + ', undecided ' + g.undecided);
			if (isNum(g.max_seconds))
				bits.push('at most ' + g.max_seconds + ' s of timing');
			if (isNum(g.flush_bytes) && g.flush_bytes > 0)
				bits.push('flush ' + Math.round(g.flush_bytes / 1048576) + ' MiB');
			if (g.mode && g.mode !== 'default')
				bits.push('mode ' + g.mode);
			fact('settings', bits.join(' · '));
			fact('cases', String(J.ncases || J.cases.size));
			const nt = $('not-timed');
			if (s.timed === false) {
				nt.hidden = false;
				nt.textContent = 'Nothing was timed' + (s.not_timed_because ? ': ' + s.not_timed_because : '') +
					'. The cases below show what the compiles produced.';
			}
		}

		function renderProgress() {
			const p = $('job-progress');
			if (J.verdict || !J.start) {
				p.textContent = J.state === 'queued' ? 'waiting in the queue' : '';
				return;
			}
			const c = J.cases.get(J.current);
			const last = c && c.pairs.length ? c.pairs[c.pairs.length - 1] : null;
			let t;
			/* The later sessions time the cases again, case by case. */
			if (last && last.session > 1)
				t = 'session ' + last.session + ': ' + J.current;
			else
				t = 'case ' + J.caseIndex + (J.ncases ? ' of ' + J.ncases : '') + (J.current ? ': ' + J.current : '');
			if (c && c.pairs.length)
				t += ', ' + c.pairs.length + ' pairs';
			if ([...J.cases.values()].some(x => x.cv))
				t = 'judging';
			p.textContent = t;
		}

		function makeCaseDom(c) {
			const box = el('div', {class: 'case', 'data-case': c.name, 'data-pairs': 0});
			c.dom = {
				box,
				badge: el('span', {class: 'badge'}),
				count: el('span', {class: 'count'}),
				statics: el('div', {class: 'static'}),
				arms: el('div'),
				code: el('div', {class: 'code', hidden: true}),
				plot: el('div', {class: 'plot-box'}),
				errs: el('div'),
			};
			box.append(el('div', {class: 'case-head'}, el('h3', {class: 'mono', text: c.name}),
				      c.dom.badge, c.dom.count),
				   c.dom.statics, c.dom.errs, c.dom.plot, c.dom.code, c.dom.arms);
			$('cases').append(box);
		}

		/* The case line's static facts: one line, and both arms in a table. */
		function renderStatics(c) {
			const l = c.line;
			if (!l)
				return;
			let text;
			const b = (l.baseline || {}).compiled, k = (l.candidate || {}).compiled;
			if (l.applicable === false)
				text = 'not applicable' + (l.not_applicable_because ? ': ' + l.not_applicable_because : '');
			else if (b && k && l.identical_code)
				text = 'identical code';
			else if (b && k) {
				const d = codeCell({identical_code: false}, l);
				text = 'code differs' + (d === 'differs' ? ': same size and registers' : ': ' + d);
			} else if (b)
				text = 'the candidate did not compile';
			else if (k)
				text = 'the baseline did not compile';
			else
				text = 'neither arm compiled';
			if (l.family)
				text += ' · ' + l.family + (l.kernel ? ' / ' + l.kernel : '');
			if (l.target)
				text += ' · ' + l.target;
			c.dom.statics.textContent = text;
			const rows = [['compiled', 'compiled', v => v ? (v === true ? 'yes' : v) : 'no'],
				['code bytes', 'code_bytes'], ['registers', 'registers'], ['spill stores', 'spill_stores'],
				['spill loads', 'spill_loads'], ['stack bytes', 'stack_bytes'], ['shared bytes', 'shared_bytes'],
				['compile ms', 'compile_ms', v => isNum(v) ? v.toFixed(1) : '-'], ['cached', 'cached', v => v ? 'yes' : 'no'],
				['max abs error', 'max_abs_error', v => fmtG(v, 3)],
				['blocks per SM (driver)', 'driver_blocks_per_sm']];
			const t = el('table', {class: 'arms'}, el('tr', {}, el('th'), el('th', {text: 'baseline'}), el('th', {text: 'candidate'})));
			for (const [what, key, f] of rows) {
				const cell = a => {
					const v = (l[a] || {})[key];
					return f ? f(v) : v === null || v === undefined ? '-' : String(v);
				};
				t.append(el('tr', {}, el('td', {text: what}), el('td', {text: cell('baseline')}), el('td', {text: cell('candidate')})));
			}
			/* Folded where a plot or the code line's figures lead. */
			const timed = J.start && J.start.timed !== false;
			c.dom.arms.replaceChildren(timed || c.code ? el('details', {}, el('summary', {text: 'both arms'}), t) : t);
		}

		function renderCase(c) {
			renderStatics(c);
			/* Drawn once per code line: a case is redrawn with every
			 * batch of pairs, and its diff may be 128 KiB. */
			if (c.code && c.code !== c.codeShown) {
				c.codeShown = c.code;
				c.dom.code.replaceChildren(...codeBlock(c.code));
				c.dom.code.dataset.codeCase = c.name;
				c.dom.code.hidden = false;
			}
			const cv = c.cv;
			if (cv) {
				c.dom.badge.textContent = cv.verdict + (cv.failed_arm ? ' (' + cv.failed_arm + ')' : '');
				c.dom.badge.className = 'badge v-' + cv.verdict;
			}
			const errs = J.errors.filter(e => e.case === c.name);
			c.dom.errs.replaceChildren(...errs.map(e => el('div', {class: 'case-error'},
				(e.arm ? e.arm + ' ' : '') + (e.stage || 'run') + (e.code ? ' (' + e.code + ')' : '') + ': ' + (e.message || ''))));
			if (!c.pairs.length) {
				/* Until its first pair, a case being timed shows no plot. */
				const waiting = !c.cv && !J.verdict && c.line && c.line.timed && J.start && J.start.timed !== false;
				c.dom.count.textContent = waiting ? 'no pairs yet' : 'not timed';
				c.dom.plot.replaceChildren();
				return;
			}
			c.dom.count.textContent = c.pairs.length + ' pair' + (c.pairs.length === 1 ? '' : 's');
			c.dom.plot.replaceChildren(pairPlot(c));
			c.dom.box.dataset.pairs = String(c.pairs.length);
		}

		/* The case's pairs as they came: x the pair index, y the pair's
		 * candidate/baseline ratio on a log scale, the line at 1 and the
		 * margin band around it; with the case verdict, its ratio and
		 * interval as a line and a shaded band. */
		function pairPlot(c) {
			const W = 560, H = 190, L = 56, R = 10, T = 8, B = 26;
			const pts = c.pairs.filter(p => isNum(p.r));
			const rs = pts.filter(p => !p.excluded).map(p => p.r).sort((a, b) => a - b);
			const m = J.margin !== null ? J.margin : 0;
			let lo = Math.min(quantile(rs, 0.01), 1 - 1.5 * m, 0.999);
			let hi = Math.max(quantile(rs, 0.99), 1 + 1.5 * m, 1.001);
			if (c.cv && isNum(c.cv.ratio_lo) && isNum(c.cv.ratio_hi)) {
				lo = Math.min(lo, c.cv.ratio_lo);
				hi = Math.max(hi, c.cv.ratio_hi);
			}
			if (!isNum(lo) || !isNum(hi) || lo <= 0) {
				lo = 0.99;
				hi = 1.01;
			}
			[lo, hi] = padRatio(lo, hi, 0.06);
			const maxX = Math.max(1, ...pts.map(p => p.x + 1), ((J.start || {}).settings || {}).pairs || 0);
			const X = x => L + (x + 0.5) / maxX * (W - L - R);
			const Y = logScale(lo, hi, H - B, T);
			const g = sv('svg', {class: 'plot', viewBox: '0 0 ' + W + ' ' + H, role: 'img',
				'aria-label': 'pairs of ' + c.name});
			for (const [r, label] of ratioTicks(lo, hi, 5)) {
				g.append(sv('line', {class: 'gridline', x1: L, x2: W - R, y1: Y(r), y2: Y(r)}),
					 sv('text', {x: L - 5, y: Y(r) + 3.5, 'text-anchor': 'end', text: label}));
			}
			if (m > 0) {
				const top = Y(Math.min(hi, 1 + m)), bot = Y(Math.max(lo, 1 - m));
				g.append(sv('rect', {class: 'band', x: L, width: W - L - R, y: top, height: Math.max(0, bot - top)},
					    sv('title', {text: 'the margin: 1 ± ' + fmtG(100 * m, 3) + '%'})));
			}
			g.append(sv('line', {class: 'one', x1: L, x2: W - R, y1: Y(1), y2: Y(1)}));
			if (c.cv && isNum(c.cv.ratio_lo) && isNum(c.cv.ratio_hi)) {
				const a = Y(c.cv.ratio_hi), b = Y(c.cv.ratio_lo);
				g.append(sv('rect', {class: 'est-band', x: L, width: W - L - R, y: a, height: Math.max(1, b - a)}));
			}
			if (c.cv && isNum(c.cv.ratio_median))
				g.append(sv('line', {class: 'est', x1: L, x2: W - R, y1: Y(c.cv.ratio_median), y2: Y(c.cv.ratio_median)},
					    sv('title', {text: 'ratio ' + fmtG(c.cv.ratio_median, 5) + ' ' + changeCell(c.cv)})));
			/* One path of tiny squares is far lighter than thousands of
			 * circles; clipped points are drawn at the edge in another colour. */
			const rr = pts.length > 1500 ? 1.1 : pts.length > 400 ? 1.5 : 2.1;
			let dIn = '', dClip = '', dEx = '';
			for (const p of pts) {
				const clipped = p.r < lo || p.r > hi;
				const x = X(p.x), y = Y(Math.min(hi, Math.max(lo, p.r)));
				const sq = 'M' + (x - rr).toFixed(1) + ' ' + (y - rr).toFixed(1) + 'h' + (2 * rr) + 'v' + (2 * rr) + 'h' + (-2 * rr) + 'z';
				if (p.excluded)
					dEx += sq;
				else if (clipped)
					dClip += sq;
				else
					dIn += sq;
			}
			g.append(sv('path', {class: 'pt', d: dIn || 'M0 0'}));
			if (dClip)
				g.append(sv('path', {class: 'pt clipped', d: dClip}, sv('title', {text: 'beyond the plotted range'})));
			if (dEx)
				g.append(sv('path', {class: 'pt excluded', d: dEx}, sv('title', {text: 'throttled block: left out'})));
			g.append(sv('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}),
				 sv('line', {class: 'axis', x1: L, x2: L, y1: T, y2: H - B}));
			for (const t of linearTicks(0, maxX, 6))
				g.append(sv('text', {x: X(t - 0.5), y: H - B + 14, 'text-anchor': 'middle', text: String(t)}));
			g.append(sv('text', {x: W - R, y: H - 2, 'text-anchor': 'end', text: 'pair'}));
			return g;
		}

		/* The rows of the summary: case_verdict lines, else the verdict
		 * line's cases (a verdict quald wrote itself may have neither). */
		function summaryRows() {
			const rows = [...J.cases.values()].filter(c => c.cv).map(c => c.cv);
			if (rows.length || !J.verdict)
				return rows;
			return Array.isArray(J.verdict.cases) ? J.verdict.cases : [];
		}

		function renderTable() {
			const tb = $('verdict-table').tBodies[0];
			tb.replaceChildren();
			const rows = summaryRows();
			let logsum = 0, ngeo = 0;
			for (const cv of rows) {
				const c = J.cases.get(cv.case);
				let bu = '-', cu = '-';
				const valid = c ? c.pairs.filter(p => isNum(p.r)) : [];
				if (valid.length) {
					bu = (median(valid.map(p => p.b)) / 1000).toFixed(3);
					cu = (median(valid.map(p => p.k)) / 1000).toFixed(3);
				}
				const ch = changeCell(cv);
				tb.append(el('tr', {'data-case-row': cv.case, 'data-verdict': cv.verdict},
					el('td', {class: 'mono'}, el('a', {href: '#case-' + cv.case, text: cv.case})),
					el('td', {class: 'v-' + cv.verdict, text: cv.verdict + (cv.failed_arm ? ' (' + cv.failed_arm + ')' : '')}),
					el('td', {text: codeCell(cv, c && c.line)}),
					el('td', {class: 'num', text: bu}),
					el('td', {class: 'num', text: cu}),
					el('td', {class: 'num', 'data-change': countsInGeomean(cv) ? pct(cv.ratio_median) : '-', text: ch}),
					el('td', {class: 'num', text: fmtG(cv.p_holm, 3)}),
					el('td', {class: 'num', text: pct(cv.detectable_ratio)})));
				if (c)
					c.dom.box.id = 'case-' + cv.case;
				if (countsInGeomean(cv)) {
					logsum += Math.log(cv.ratio_median);
					ngeo++;
				}
			}
			if (!rows.length)
				tb.append(el('tr', {class: 'empty'}, el('td', {colspan: 8,
					text: J.verdict ? 'no case verdicts' : 'the case verdicts come after every case has run'})));
			const gm = $('geomean');
			if (!rows.length)
				gm.textContent = '';
			else if (!ngeo)
				gm.textContent = 'geomean: no timed case';
			else
				gm.textContent = 'geomean over ' + ngeo + ' timed case' + (ngeo === 1 ? '' : 's') + ': ' +
					pct(Math.exp(logsum / ngeo)) + ' (candidate against baseline)';
			const box = $('verdict-box');
			if (J.verdict) {
				const v = J.verdict;
				const tally = new Map();
				for (const r of (Array.isArray(v.cases) && v.cases.length ? v.cases : rows))
					if (r.verdict)
						tally.set(r.verdict, (tally.get(r.verdict) || 0) + 1);
				const gate = v.gate || {};
				box.replaceChildren(
					el('div', {}, el('span', {class: 'big v-' + v.verdict, text: v.verdict}),
					   tally.size ? el('span', {class: 'msg', text: [...tally].map(([k, n]) => n + ' ' + k).join(', ')}) : ''),
					v.message ? el('div', {class: 'note', text: v.message}) : '',
					(gate.regression_cases || []).length ? el('div', {class: 'note', text: 'regression cases: ' + gate.regression_cases.join(', ')}) : '',
					(gate.improvement_cases || []).length ? el('div', {class: 'note', text: 'improvement cases: ' + gate.improvement_cases.join(', ')}) : '');
			}
		}

		/* The forest: one row per case verdict, its ratio and interval on
		 * the log-ratio axis against 1 and the margin band. */
		function renderForest() {
			const rows = [...J.cases.values()].filter(c => c.cv && isNum(c.cv.ratio_median));
			const sec = $('forest-section');
			sec.hidden = rows.length === 0;
			if (!rows.length)
				return;
			const m = J.margin !== null ? J.margin : 0;
			const dom = robustDomain(rows.flatMap(c => [c.cv.ratio_lo, c.cv.ratio_median, c.cv.ratio_hi]), m);
			const [lo, hi] = padRatio(dom.lo, dom.hi, 0.05);
			const clamp = r => Math.min(hi, Math.max(lo, r));
			const RH = 20, W = 1000, L = 240, R = 260, T = 6, B = 24, H = T + RH * rows.length + B;
			const X = logScale(lo, hi, L, W - R);
			const g = sv('svg', {class: 'plot', viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'change per case'});
			for (const [r, label] of ratioTicks(lo, hi, 7))
				g.append(sv('line', {class: 'gridline', x1: X(r), x2: X(r), y1: T, y2: H - B}),
					 sv('text', {x: X(r), y: H - B + 14, 'text-anchor': 'middle', text: label}));
			if (m > 0)
				g.append(sv('rect', {class: 'band', x: X(Math.max(lo, 1 - m)), y: T, height: H - B - T,
					width: X(Math.min(hi, 1 + m)) - X(Math.max(lo, 1 - m))},
					sv('title', {text: 'the margin: 1 ± ' + fmtG(100 * m, 3) + '%'})));
			g.append(sv('line', {class: 'one', x1: X(1), x2: X(1), y1: T, y2: H - B}));
			rows.forEach((c, i) => {
				const cv = c.cv, y = T + RH * i + RH / 2;
				const row = sv('g', {class: 'v-' + cv.verdict, 'data-forest-case': c.name});
				row.append(sv('line', {class: 'rowline', x1: 0, x2: W, y1: y + RH / 2, y2: y + RH / 2}),
					   sv('text', {class: 'name', x: L - 10, y: y + 4, 'text-anchor': 'end', text: c.name}));
				if (isNum(cv.ratio_lo) && isNum(cv.ratio_hi) && cv.ratio_lo > 0) {
					const a = clamp(cv.ratio_lo), b = clamp(cv.ratio_hi);
					row.append(sv('line', {class: 'ci', x1: X(a), x2: X(b), y1: y, y2: y}));
					if (a === cv.ratio_lo)
						row.append(sv('line', {class: 'ci', x1: X(a), x2: X(a), y1: y - 4, y2: y + 4}));
					if (b === cv.ratio_hi)
						row.append(sv('line', {class: 'ci', x1: X(b), x2: X(b), y1: y - 4, y2: y + 4}));
				}
				const r = cv.ratio_median, tip = sv('title', {text: c.name + ': ' + cv.verdict + ' ' + changeCell(cv)});
				if (r > hi || r < lo)
					row.append(edgeMarkX(X(clamp(r)), y, r > hi, 5), tip);
				else
					row.append(sv('circle', {class: 'mark', cx: X(r), cy: y, r: 4.5}, tip));
				row.append(sv('text', {x: W - R + 10, y: y + 4, text: changeCell(cv)}));
				g.append(row);
			});
			g.append(sv('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}));
			$('forest').replaceChildren(g);
		}

		function renderErrors() {
			const errs = J.errors;
			$('errors-section').hidden = errs.length === 0;
			$('errors').replaceChildren(...errs.map(e => el('li', {},
				e.code ? el('code', {text: e.code}) : '', e.code ? ' ' : '',
				(e.case ? 'case ' + e.case + ': ' : '') + (e.arm ? e.arm + ' ' : '') + (e.stage || 'run') + ': ' + (e.message || ''))));
		}

		function follow() {
			const es = new EventSource('/api/jobs/' + encodeURIComponent(id) + '/events');
			J.es = es;
			es.onopen = () => setLive('on', 'live');
			es.onmessage = ev => {
				const line = eventLine(ev);

				if (line && !Number.isInteger(line.seq) && ev.lastEventId !== '')
					line.seq = Number(ev.lastEventId);
				take(line);
			};
			/* After the verdict line quald ends the stream; closing it
			 * here keeps EventSource from reconnecting. */
			es.addEventListener('end', () => {
				es.close();
				setLive('', 'finished');
				if (!J.verdict && J.state !== 'done')
					J.all = true;
				schedule();
			});
			es.onerror = () => {
				if (es.readyState === EventSource.CLOSED)
					setLive('off', 'disconnected');
				else
					setLive('off', 'reconnecting');
			};
		}

		(async function () {
			let job;
			try {
				job = await getJSON('/api/jobs/' + encodeURIComponent(id));
			} catch (e) {
				showError(e.message);
				setLive('off', e.status === 404 ? 'no such job' : 'error');
				$('job-state').textContent = e.status === 404 ? 'unknown' : 'error';
				return;
			}
			J.state = job.state || '';
			J.labels = job.labels || {};
			J.fleet = {gpu_type: job.gpu_type, slurm: job.slurm};
			J.all = true;
			for (const line of job.lines || [])
				take(line);
			render();
			if (J.verdict) {
				setLive('', 'finished');
				return;
			}
			follow();
		})();
	}

	/* ---- history page ------------------------------------------------ */

	function initHistory() {
		const params = new URLSearchParams(location.search);
		const fCase = params.get('case') || '';
		const fLabels = params.getAll('label').filter(Boolean);
		const fLimit = params.get('limit') || '';
		const xChoice = params.get('x') || '';

		$('f-case').value = fCase;
		$('f-limit').value = fLimit;
		const labelBox = $('f-labels');
		const addLabel = v => labelBox.append(el('input', {name: 'label', value: v, placeholder: 'key=value', autocomplete: 'off'}));
		fLabels.forEach(addLabel);
		addLabel('');
		$('f-add-label').addEventListener('click', () => addLabel(''));
		/* The query as the API reads it: repeated label=K=V, none empty. */
		$('filter').addEventListener('submit', ev => {
			ev.preventDefault();
			const q = new URLSearchParams();
			const c = $('f-case').value.trim();
			if (c)
				q.set('case', c);
			for (const i of labelBox.querySelectorAll('input'))
				if (i.value.trim())
					q.append('label', i.value.trim());
			if ($('f-x').value)
				q.set('x', $('f-x').value);
			if ($('f-limit').value)
				q.set('limit', $('f-limit').value);
			location.search = q.toString();
		});

		const api = new URLSearchParams();
		if (fCase)
			api.set('case', fCase);
		fLabels.forEach(l => api.append('label', l));
		api.set('limit', fLimit || '100');

		(async function () {
			let hist, list = null;
			try {
				hist = await getJSON('/api/history?' + api.toString());
			} catch (e) {
				showError('cannot load the history: ' + e.message);
				return;
			}
			const jobs = hist.jobs || [];
			/* Summaries quald is still rebuilding after a start: those
			 * jobs are not in this reply. */
			if (hist.incomplete)
				showError('incomplete: quald is still reading the logs of ' + hist.pending +
					  ' ended job' + (hist.pending === 1 ? '' : 's') + ', left out; reload shortly');
			/* The margin of each job is in its settings (/api/jobs). */
			if (jobs.length) {
				try {
					list = await getJSON('/api/jobs?limit=1000');
				} catch (e) {
					list = null;
				}
			}
			const margins = new Map();
			for (const j of (list && list.jobs) || [])
				if (j.settings && isNum(j.settings.margin))
					margins.set(j.job, j.settings.margin);
			draw(jobs, margins);
		})();

		function draw(jobs, margins) {
			/* The x axis: a label key, the finish date, or the job id. */
			const keys = new Set();
			for (const j of jobs)
				for (const k of Object.keys(j.labels || {}))
					keys.add(k);
			const sel = $('f-x');
			sel.replaceChildren();
			const pref = ['commit', 'build', 'version', 'rev'].find(k => jobs.length && jobs.every(j => (j.labels || {})[k] !== undefined));
			let x = xChoice || (pref ? 'label:' + pref : 'date');
			for (const [v, t] of [['date', 'finish date'], ['job', 'job id'], ...[...keys].sort().map(k => ['label:' + k, 'label ' + k])])
				sel.append(el('option', {value: v, text: t, selected: v === x}));
			if (![...sel.options].some(o => o.value === x))
				x = 'date';
			const xLabel = j => x === 'job' ? j.job : x === 'date' ? utc(j.finished).slice(0, 16) :
				((j.labels || {})[x.slice(6)] !== undefined ? String(j.labels[x.slice(6)]) : j.job);
			$('h-x-head').textContent = x === 'job' ? 'job' : x === 'date' ? 'finished' : x.slice(6);

			const names = [];
			for (const j of jobs)
				for (const c of j.cases || [])
					if (!names.includes(c.case))
						names.push(c.case);
			$('case-names').replaceChildren(...names.map(n => el('option', {value: n})));
			const filt = [fCase ? 'case ' + fCase : 'every case', ...fLabels.map(l => 'label ' + l)].join(', ');
			$('history-note').textContent = jobs.length ?
				jobs.length + ' job' + (jobs.length === 1 ? '' : 's') + ' (' + filt + '), oldest first; ' +
				'points are the change (candidate against baseline) with its interval, coloured by the case verdict; the band is the margin.' :
				'no finished job matches (' + filt + ')';

			const plots = $('plots');
			plots.replaceChildren();
			for (const name of names)
				plots.append(historyPlot(name, jobs, margins, xLabel));

			const tb = $('history-table').tBodies[0];
			tb.replaceChildren();
			for (const j of jobs)
				for (const c of j.cases || []) {
					const ch = isNum(c.ratio) ? pct(c.ratio) + (isNum(c.ci_low) && isNum(c.ci_high) ?
						' [' + pct(c.ci_low) + ', ' + pct(c.ci_high) + ']' : '') : '-';
					const files = 'baseline ' + ((j.baseline || {}).path || '?') + ' (sha256 ' + ((j.baseline || {}).sha256 || '?') +
						'), candidate ' + ((j.candidate || {}).path || '?') + ' (sha256 ' + ((j.candidate || {}).sha256 || '?') + ')';
					tb.append(el('tr', {class: 'hist-row', 'data-job': j.job, 'data-case': c.case, 'data-verdict': c.verdict},
						el('td', {title: files}, jobLink(j.job)),
						el('td', {text: xLabel(j)}),
						el('td', {class: 'mono', text: utc(j.finished)}),
						el('td', {class: 'mono', text: c.case}),
						el('td', {class: 'v-' + c.verdict, text: c.verdict || '-'}),
						el('td', {class: 'num', text: ch}),
						el('td', {class: 'num', text: fmtG(c.p_holm, 3)}),
						el('td', {class: 'num', text: isNum(c.baseline_ns) ? (c.baseline_ns / 1000).toFixed(3) : '-'}),
						el('td', {class: 'num', text: isNum(c.candidate_ns) ? (c.candidate_ns / 1000).toFixed(3) : '-'})));
				}
			if (!tb.rows.length)
				tb.append(el('tr', {class: 'empty'}, el('td', {colspan: 9, text: 'nothing to show'})));
			document.body.dataset.ready = '1';
		}

		/* One case across the jobs: x the job (in order), y the change on a
		 * log-ratio axis, whiskers for the interval, the margin band per job. */
		function historyPlot(name, jobs, margins, xLabel) {
			const W = 640, L = 56, R = 10, T = 10;
			const labels = jobs.map(xLabel);
			const longest = Math.max(...labels.map(s => s.length), 1);
			const rotate = jobs.length > 6 || longest > 12;
			const B = rotate ? Math.min(96, 16 + 5.6 * Math.min(longest, 16)) : 26;
			const H = 190 + B;
			const DEFAULT_MARGIN = 0.01;
			const entries = [];
			jobs.forEach((j, i) => {
				const c = (j.cases || []).find(c => c.case === name);
				if (!c)
					return;
				const m = margins.has(j.job) ? margins.get(j.job) : DEFAULT_MARGIN;
				entries.push({i, j, c, m});
			});
			const mmax = Math.max(0, ...entries.map(e => e.m));
			const dom = robustDomain(entries.flatMap(e => [e.c.ratio, e.c.ci_low, e.c.ci_high]), mmax);
			const [lo, hi] = padRatio(dom.lo, dom.hi, 0.08);
			const clamp = r => Math.min(hi, Math.max(lo, r));
			const n = Math.max(1, jobs.length);
			const step = (W - L - R) / n;
			const X = i => L + step * (i + 0.5);
			const Y = logScale(lo, hi, H - B, T);
			const g = sv('svg', {class: 'plot', viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'history of ' + name});
			for (const [r, label] of ratioTicks(lo, hi, 6))
				g.append(sv('line', {class: 'gridline', x1: L, x2: W - R, y1: Y(r), y2: Y(r)}),
					 sv('text', {x: L - 6, y: Y(r) + 3.5, 'text-anchor': 'end', text: label}));
			for (const e of entries) {
				const a = Y(Math.min(hi, 1 + e.m)), b = Y(Math.max(lo, 1 - e.m));
				g.append(sv('rect', {class: 'band', x: X(e.i) - step / 2, width: step, y: a, height: Math.max(0, b - a)}));
			}
			g.append(sv('line', {class: 'one', x1: L, x2: W - R, y1: Y(1), y2: Y(1)}));
			const every = Math.max(1, Math.ceil(n / 30));
			labels.forEach((s, i) => {
				if (i % every)
					return;
				const t = s.length > 16 ? s.slice(0, 15) + '…' : s;
				g.append(rotate ?
					sv('text', {x: X(i), y: H - B + 10, 'text-anchor': 'end', transform: 'rotate(-40 ' + X(i) + ' ' + (H - B + 10) + ')', text: t}) :
					sv('text', {x: X(i), y: H - B + 15, 'text-anchor': 'middle', text: t}));
			});
			const r = Math.max(2.5, Math.min(5, step / 4));
			for (const e of entries) {
				const c = e.c, x = X(e.i);
				const tip = e.j.job + ' (' + labels[e.i] + '): ' + (c.verdict || '?') + ' ' +
					(isNum(c.ratio) ? pct(c.ratio) : 'not timed') +
					(isNum(c.ci_low) ? ' [' + pct(c.ci_low) + ', ' + pct(c.ci_high) + ']' : '');
				const pt = sv('g', {class: 'v-' + c.verdict, 'data-point': '', 'data-job': e.j.job, 'data-case': name});
				pt.append(sv('title', {text: tip}));
				if (isNum(c.ratio) && c.ratio > 0) {
					if (isNum(c.ci_low) && isNum(c.ci_high) && c.ci_low > 0) {
						const a = clamp(c.ci_low), b = clamp(c.ci_high);
						pt.append(sv('line', {class: 'ci', x1: x, x2: x, y1: Y(a), y2: Y(b)}));
						if (a === c.ci_low)
							pt.append(sv('line', {class: 'ci', x1: x - r, x2: x + r, y1: Y(a), y2: Y(a)}));
						if (b === c.ci_high)
							pt.append(sv('line', {class: 'ci', x1: x - r, x2: x + r, y1: Y(b), y2: Y(b)}));
					}
					if (c.ratio > hi || c.ratio < lo) {
						const up = c.ratio > hi, y = Y(clamp(c.ratio)) + (up ? 6 : -6);
						pt.append(edgeMark(x, y, up, r + 1),
							  sv('text', {class: 'clip-label', x: x + r + 4, y: y + (up ? 2 : 4),
								text: c.ratio >= 2 ? '×' + fmtG(c.ratio, 3) : pct(c.ratio)}));
					} else
						pt.append(sv('circle', {class: 'mark', cx: x, cy: Y(c.ratio), r}));
				} else {
					/* Not timed (compile-only, failed, not applicable): a
					 * cross on the line at 1, so that the job still shows. */
					const y = Y(1);
					pt.append(sv('path', {class: 'untimed', d: 'M' + (x - r) + ' ' + (y - r) + 'L' + (x + r) + ' ' + (y + r) +
						'M' + (x - r) + ' ' + (y + r) + 'L' + (x + r) + ' ' + (y - r)}));
				}
				g.append(pt);
			}
			g.append(sv('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}),
				 sv('line', {class: 'axis', x1: L, x2: L, y1: T, y2: H - B}));
			const verdicts = [...new Set(entries.map(e => e.c.verdict))];
			const noMargin = entries.some(e => !margins.has(e.j.job));
			return el('div', {class: 'plot-card', 'data-case': name},
				el('h3', {class: 'mono'}, el('a', {href: '/history?' + new URLSearchParams([['case', name], ...fLabels.map(l => ['label', l])]).toString(), text: name})),
				g,
				el('div', {class: 'legend'},
				   ...verdicts.map(v => el('span', {class: 'v-' + v, text: v})),
				   el('span', {class: 'l-band', text: noMargin ? 'margin (1% where a job\'s settings do not say)' : 'margin'})));
		}
	}

	const pages = {index: initIndex, job: initJob, history: initHistory};
	const page = pages[document.body.dataset.page];
	if (page)
		page();
})();
