// A small stand-in for MiniWoB++'s core.js, for web-v1's tests: the same
// globals and functions the kind uses (Math.seedrandom, core.startEpisode,
// core.startEpisodeReal, core.endEpisode, core.getUtterance,
// core.EPISODE_MAX_TIME, WOB_*), and, as in MiniWoB++, a START cover that
// restarts the episode when clicked after the episode ended.
//
// Unlike MiniWoB++'s, its timers (the episode's time limit, a page's own
// delays) run on core.clock, which only the tests advance
// (core.clock.advance(ms), from the env's page): time passes on the page
// when a test says so, so no test races the page's clock on a loaded
// machine. The time discount reads the real time, as MiniWoB++'s does.
var core = {};
var WOB_REWARD_GLOBAL = 0;
var WOB_RAW_REWARD_GLOBAL = 0;
var WOB_REWARD_REASON = null;
var WOB_DONE_GLOBAL = false;
var WOB_EPISODE_ID = 0;
core.EPISODE_MAX_TIME = 10000;
core.EP_TIMER = null;
core.ept0 = 0;

// A linear congruential generator seeded from the string of the seed.
Math.seedrandom = function (seed) {
  var s = 0, t = String(seed);
  for (var i = 0; i < t.length; i++) s = (Math.imul(s, 31) + t.charCodeAt(i)) >>> 0;
  Math.random = function () {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    var x = Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) >>> 0;
    x = Math.imul(x ^ (x >>> 12), 0x297a2d39) >>> 0;
    return ((x ^ (x >>> 15)) >>> 0) / 4294967296;
  };
};
core.randi = function (min, max) { return Math.floor(Math.random() * (max - min) + min); };

// The tests' clock: set(fn, ms) runs fn once advance has moved now ms on;
// clear(timer) cancels it.
core.clock = {
  now: 0,
  timers: [],
  set: function (fn, ms) { var t = {at: this.now + ms, fn: fn}; this.timers.push(t); return t; },
  clear: function (t) { var i = this.timers.indexOf(t); if (i >= 0) this.timers.splice(i, 1); },
  advance: function (ms) {
    var end = this.now + ms;
    for (;;) {
      var next = null;
      for (var i = 0; i < this.timers.length; i++) {
        if (this.timers[i].at <= end && (next === null || this.timers[i].at < next.at)) next = this.timers[i];
      }
      if (next === null) break;
      this.clear(next);
      this.now = next.at;
      next.fn();
    }
    this.now = end;
  }
};

core.cover = function () {
  var c = document.getElementById('sync-task-cover');
  if (!c) {
    c = document.createElement('div');
    c.id = 'sync-task-cover';
    c.textContent = 'START';
    c.onclick = function () { core.startEpisodeReal(); };
    document.body.appendChild(c);
  }
  return c;
};
core.startEpisode = function () { core.cover().style.display = 'block'; };
core.startEpisodeReal = function () {
  genProblem();
  WOB_DONE_GLOBAL = false;
  WOB_REWARD_GLOBAL = 0;
  WOB_RAW_REWARD_GLOBAL = 0;
  WOB_REWARD_REASON = null;
  core.cover().style.display = 'none';
  core.ept0 = new Date().getTime();
  if (core.EP_TIMER !== null) core.clock.clear(core.EP_TIMER);
  core.EP_TIMER = core.clock.set(function () { core.endEpisode(-1, false, 'timed out'); }, core.EPISODE_MAX_TIME);
};
core.endEpisode = function (reward, timeProportional, reason) {
  if (core.EP_TIMER === null) return;
  core.clock.clear(core.EP_TIMER);
  core.EP_TIMER = null;
  WOB_RAW_REWARD_GLOBAL = reward;
  WOB_REWARD_REASON = reason;
  if (timeProportional) {
    reward = reward * Math.max(0, 1 - (new Date().getTime() - core.ept0) / core.EPISODE_MAX_TIME);
  }
  WOB_REWARD_GLOBAL = reward;
  WOB_DONE_GLOBAL = true;
  WOB_EPISODE_ID++;
  core.startEpisode();
};
core.getUtterance = function () {
  return document.getElementById('query').textContent.replace(/\s+/g, ' ').trim();
};
