// nextstate web task core: the MiniWoB++ episode and reward contract, written
// for nextstate's own task pages. A page defines genProblem(), which builds
// one episode's problem inside #area and writes its instruction into #query,
// and calls core.startEpisode() when it has loaded. The host then seeds the
// page with Math.seedrandom(seed), calls core.startEpisodeReal(), reads the
// instruction with core.getUtterance(), and after every action reads the
// WOB_* globals below. The page ends the episode with
// core.endEpisode(reward, timeProportional, reason).

var core = {};

// ---------------------------------------------------------------------------
// Seeded randomness. Math.seedrandom(seed) replaces Math.random with a
// generator fully determined by String(seed); called with no seed it draws
// one from the browser's entropy. It returns the seed string used.

(function () {
  // Hash a string into four 32-bit words: FNV-1a over the UTF-16 code units,
  // then four differently salted avalanche mixes of the result.
  function seedWords(text) {
    var h = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) {
      h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    }
    var words = [];
    for (var k = 1; k <= 4; k++) {
      var x = (h + Math.imul(k, 0x9e3779b9)) >>> 0;
      x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
      x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
      x = (x ^ (x >>> 16)) >>> 0;
      words.push(x);
    }
    if ((words[0] | words[1] | words[2] | words[3]) === 0) words[0] = 1;
    return words;
  }

  function rotl(x, k) { return (x << k) | (x >>> (32 - k)); }

  // xoshiro128** over the four words; each call gives 32 fresh bits.
  function generator(s) {
    var a = s[0], b = s[1], c = s[2], d = s[3];
    function next32() {
      var out = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
      var t = b << 9;
      c ^= a; d ^= b; b ^= c; a ^= d;
      c ^= t;
      d = rotl(d, 11);
      return out;
    }
    // Warm up so that nearby seeds part ways at once.
    for (var i = 0; i < 16; i++) next32();
    // 53-bit doubles in [0, 1), like the browser's own Math.random.
    return function () {
      var hi = next32() >>> 5, lo = next32() >>> 6;
      return (hi * 67108864 + lo) / 9007199254740992;
    };
  }

  Math.seedrandom = function (seed) {
    var text;
    if (seed === undefined || seed === null) {
      var buf = new Uint32Array(2);
      window.crypto.getRandomValues(buf);
      text = 'auto-' + buf[0] + '-' + buf[1];
    } else {
      text = String(seed);
    }
    Math.random = generator(seedWords(text));
    return text;
  };
})();

// Random helpers over Math.random, so that a seeded page is deterministic.
core.randi = function (min, max) { return Math.floor(Math.random() * (max - min) + min); }; // [min, max)
core.randf = function (min, max) { return Math.random() * (max - min) + min; };
core.sample = function (list) { return list[core.randi(0, list.length)]; };
// core.shuffle shuffles list in place (Fisher-Yates) and returns it.
core.shuffle = function (list) {
  for (var i = list.length - 1; i > 0; i--) {
    var j = core.randi(0, i + 1);
    var t = list[i]; list[i] = list[j]; list[j] = t;
  }
  return list;
};
// core.pick returns n distinct entries of list in random order.
core.pick = function (list, n) { return core.shuffle(list.slice()).slice(0, n); };

// Word lists the task pages draw from.
core.lists = {
  words: ['amber', 'basil', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'harbor', 'indigo', 'juniper',
    'kettle', 'lantern', 'meadow', 'nectar', 'orbit', 'pebble', 'quartz', 'raven', 'saddle', 'timber',
    'umber', 'velvet', 'willow', 'yonder', 'zephyr', 'acorn', 'bramble', 'cobalt', 'dune', 'falcon',
    'glacier', 'hazel', 'iris', 'jasper', 'kelp', 'lagoon', 'maple', 'nimbus', 'oasis', 'prairie'],
  names: ['Ada', 'Bruno', 'Chen', 'Dalia', 'Emeka', 'Farah', 'Goran', 'Hana', 'Ivo', 'Jonas', 'Kira',
    'Luca', 'Maya', 'Nadia', 'Omar', 'Priya', 'Quinn', 'Rosa', 'Sven', 'Tomas', 'Uma', 'Vera', 'Wen',
    'Yusuf', 'Zoe'],
  surnames: ['Abbott', 'Berg', 'Costa', 'Diaz', 'Eriksen', 'Fischer', 'Garcia', 'Haddad', 'Ito', 'Jensen',
    'Kowalski', 'Lindqvist', 'Moreau', 'Novak', 'Okafor', 'Petrov', 'Ruiz', 'Sato', 'Tanaka', 'Varga'],
  fruits: ['Apple', 'Apricot', 'Banana', 'Blueberry', 'Cherry', 'Coconut', 'Fig', 'Grape', 'Guava', 'Kiwi',
    'Lemon', 'Lime', 'Mango', 'Melon', 'Nectarine', 'Olive', 'Orange', 'Papaya', 'Peach', 'Pear', 'Plum',
    'Quince'],
  countries: ['Argentina', 'Belgium', 'Canada', 'Denmark', 'Egypt', 'Finland', 'Ghana', 'Hungary', 'India',
    'Japan', 'Kenya', 'Latvia', 'Mexico', 'Norway', 'Oman', 'Peru', 'Portugal', 'Spain', 'Sweden',
    'Thailand', 'Uruguay', 'Vietnam'],
  colors: ['red', 'orange', 'gold', 'green', 'teal', 'blue', 'purple', 'pink', 'brown', 'gray'],
  months: ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
    'October', 'November', 'December']
};

// ---------------------------------------------------------------------------
// The episode contract. The host reads these globals after every action.

var WOB_REWARD_GLOBAL = 0;      // the last episode's reward, discounted by time when asked
var WOB_RAW_REWARD_GLOBAL = 0;  // the same reward before any discount
var WOB_REWARD_REASON = null;   // why the episode ended (a short text), or null
var WOB_DONE_GLOBAL = false;    // true once the episode has ended
var WOB_EPISODE_ID = 0;         // episodes ended on this page so far
var WOB_TASK_READY = true;      // a page that builds its problem asynchronously sets this false until ready

core.EPISODE_MAX_TIME = 10000;  // ms; a page may set its own limit before the episode starts

core.episodeTimer = null; // the pending time-out, non-null exactly while an episode runs
core.episodeStart = null; // when the running episode started (ms since the epoch)
core.cover = null;        // the start cover shown between episodes

// core.startEpisode shows the start cover. A person starts an episode by
// clicking it; an automated host calls core.startEpisodeReal() itself.
core.startEpisode = function () {
  if (core.episodeTimer !== null) return; // an episode is already running
  if (core.cover === null) {
    core.cover = document.createElement('div');
    core.cover.id = 'sync-task-cover';
    core.cover.textContent = 'START';
    core.cover.addEventListener('click', function () { core.startEpisodeReal(); });
    document.body.appendChild(core.cover);
  }
  core.cover.style.display = 'block';
};

// core.startEpisodeReal builds a fresh problem with genProblem() and starts
// the clock. Whatever episode was running is abandoned without a reward.
core.startEpisodeReal = function () {
  if (core.episodeTimer !== null) { clearTimeout(core.episodeTimer); core.episodeTimer = null; }
  WOB_DONE_GLOBAL = false;
  WOB_REWARD_GLOBAL = 0;
  WOB_RAW_REWARD_GLOBAL = 0;
  WOB_REWARD_REASON = null;
  core.clearSelection();
  genProblem();
  document.body.scrollTop = 0;
  document.documentElement.scrollTop = 0;
  if (core.cover !== null) core.cover.style.display = 'none';
  core.episodeStart = Date.now();
  core.episodeTimer = setTimeout(function () {
    core.endEpisode(-1, false, 'timed out');
  }, core.EPISODE_MAX_TIME);
};

// core.endEpisode ends the running episode with a raw reward in [-1, 1].
// With timeProportional the reward is scaled by the share of the time limit
// left, so a faster success earns more: reward * max(0, 1 - elapsed/limit).
// Only the first call of an episode counts; later ones do nothing.
core.endEpisode = function (reward, timeProportional, reason) {
  if (core.episodeTimer === null) return;
  clearTimeout(core.episodeTimer);
  core.episodeTimer = null;
  var scaled = reward;
  if (timeProportional) {
    var elapsed = Date.now() - core.episodeStart;
    scaled = reward * Math.max(0, 1 - elapsed / core.EPISODE_MAX_TIME);
  }
  WOB_RAW_REWARD_GLOBAL = reward;
  WOB_REWARD_GLOBAL = scaled;
  WOB_REWARD_REASON = reason === undefined ? null : reason;
  WOB_DONE_GLOBAL = true;
  WOB_EPISODE_ID++;
  core.startEpisode();
};

// core.succeed and core.fail are the two usual endings: 1 discounted by
// time, and -1 undiscounted.
core.succeed = function (reason) { core.endEpisode(1, true, reason); };
core.fail = function (reason) { core.endEpisode(-1, false, reason); };

// core.running reports whether an episode is under way (actions count).
core.running = function () { return core.episodeTimer !== null; };

// core.getUtterance returns the instruction: the text of #query with its
// white space collapsed.
core.getUtterance = function () {
  var q = document.getElementById('query');
  return q ? q.textContent.replace(/\s+/g, ' ').trim() : '';
};

core.clearSelection = function () {
  var sel = window.getSelection && window.getSelection();
  if (sel) sel.removeAllRanges();
};

// ---------------------------------------------------------------------------
// Small DOM helpers for the task pages.

// core.el makes an element: core.el('button', {id: 'ok', class: 'big'}, 'OK').
// Attributes whose value is null or false are left out; children may be
// strings (text) or nodes.
core.el = function (tag, attrs) {
  var e = document.createElement(tag);
  if (attrs) {
    for (var k in attrs) {
      if (attrs[k] === null || attrs[k] === false || attrs[k] === undefined) continue;
      e.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
    }
  }
  for (var i = 2; i < arguments.length; i++) {
    var c = arguments[i];
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
};

// core.area empties #area and returns it.
core.area = function () {
  var a = document.getElementById('area');
  a.textContent = '';
  return a;
};

// core.setQuery writes the instruction. Parts in quotes are shown bold.
core.setQuery = function (text) {
  var q = document.getElementById('query');
  q.textContent = '';
  var parts = text.split(/("[^"]*")/);
  for (var i = 0; i < parts.length; i++) {
    if (parts[i] === '') continue;
    if (/^"[^"]*"$/.test(parts[i])) q.appendChild(core.el('b', null, parts[i]));
    else q.appendChild(document.createTextNode(parts[i]));
  }
};
