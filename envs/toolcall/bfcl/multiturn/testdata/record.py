"""Records what BFCL's own multi-turn classes answer, for the Go port's
differential test (diff_test.go reads the file this writes).

For every case of BFCL_v4_multi_turn_base, the ground truth is executed
turn by turn with BFCL's executor (execute_multi_turn_func_call), and so
are a few mutations of it (a call dropped, repeated, given another value,
a wrong type, a missing or an unknown argument, its keywords passed by
position, an unknown name), each in lockstep with a ground-truth run. For
every call it records the class BFCL sends it to and its result text; after
every turn, for each involved class, whether BFCL's state checker finds the
mutated instance equal to the ground truth's.

    python3 record.py BFCL_DIR DATA_DIR OUT.json.gz

BFCL_DIR is a checkout's berkeley-function-call-leaderboard folder (its
bfcl_eval package is imported; mpmath must be installed), DATA_DIR holds
BFCL_v4_multi_turn_base.json and possible_answer/. Deterministic: the
mutations are drawn from random.Random(case index). TwitterAPI.post_tweet's
default mentions list is made per instance (isolate_defaults), and the
script runs with PYTHONHASHSEED=0, so that sets print in one order.
"""

import ast
import copy
import gzip
import inspect
import json
import os
import random
import sys
import types


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Sets of strings print in their hashes' order, which Python
        # randomises per process unless told not to.
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    bfcl_dir, data_dir, out = sys.argv[1:4]
    sys.path.insert(0, bfcl_dir)
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as mtu
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI
    isolate_defaults(TwitterAPI, "post_tweet")
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import _compare_instances

    cases = [json.loads(l) for l in open(f"{data_dir}/BFCL_v4_multi_turn_base.json")]
    answers = {json.loads(l)["id"]: json.loads(l)["ground_truth"]
               for l in open(f"{data_dir}/possible_answer/BFCL_v4_multi_turn_base.json")}
    records = []
    for n, case in enumerate(cases):
        gt = answers[case["id"]]
        rng = random.Random(n)
        runs = [("ground_truth", gt)]
        for m in range(6):
            mutated = mutate(gt, rng)
            if mutated is not None:
                runs.append(mutated)
        rec = {"id": case["id"], "involved_classes": case["involved_classes"],
               "initial_config": case["initial_config"], "runs": []}
        for r, (label, turns) in enumerate(runs):
            rec["runs"].append(play(mtu, _compare_instances, case, gt, label, turns, f"r{r}"))
        records.append(rec)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        json.dump({"source": "BFCL multi_turn_base, executed by bfcl_eval's own classes", "cases": records}, f)


def play(mtu, compare, case, gt, label, turns, tag):
    """Runs turns beside the ground truth, turn by turn."""
    run = {"mutation": label, "turns": []}
    for t, calls in enumerate(turns):
        results, inst = mtu.execute_multi_turn_func_call(
            calls, case["initial_config"], case["involved_classes"], tag, case["id"], is_evaL_run=True)
        _, gt_inst = mtu.execute_multi_turn_func_call(
            gt[t], case["initial_config"], case["involved_classes"], tag + "_gt", case["id"], is_evaL_run=True)
        owners = owner_map(inst, case["involved_classes"])
        same = {name: compare(inst[name], gt_inst[name])[0] for name in case["involved_classes"]}
        run["turns"].append({
            "calls": [{"call": c, "class": owners.get(c.split("(")[0].strip()), "result": res}
                      for c, res in zip(calls, results)],
            "same_state": same,
        })
    return run


def isolate_defaults(cls, name):
    """Gives each instance its own copy of a method's mutable defaults.

    TwitterAPI.post_tweet's `mentions=[]` is one list for the whole
    process: a mention() on a tweet posted without mentions extends it for
    every such tweet of every instance, so one case's run leaks into the
    next ones. The port keeps the sharing within an instance (one case's
    run, as if it had a process of its own) and not across instances.
    The copy is kept in a private attribute, which the state checker
    skips."""
    orig = getattr(cls, name)
    slot = "_isolated_" + name

    class PerInstance:
        def __get__(self, obj, owner):
            if obj is None:
                return orig
            f = obj.__dict__.get(slot)
            if f is None:
                f = types.FunctionType(orig.__code__, orig.__globals__, orig.__name__,
                                       copy.deepcopy(orig.__defaults__), orig.__closure__)
                f.__qualname__, f.__kwdefaults__ = orig.__qualname__, orig.__kwdefaults__
                obj.__dict__[slot] = f
            return types.MethodType(f, obj)

    setattr(cls, name, PerInstance())


def owner_map(instances, involved):
    """The class BFCL's executor sends each method name to: the last
    involved class that has it."""
    owners = {}
    for name in involved:
        for method, _ in inspect.getmembers(instances[name], predicate=inspect.ismethod):
            if not method.startswith("_"):
                owners[method] = name
    return owners


def mutate(gt, rng):
    """One mutation of one call of the ground truth, or None."""
    spots = [(t, i) for t, calls in enumerate(gt) for i in range(len(calls))]
    if not spots:
        return None
    t, i = rng.choice(spots)
    call = gt[t][i]
    tree = ast.parse(call, mode="eval").body
    kind = rng.choice(["drop", "dup", "value", "value", "type", "missing", "extra", "positional", "unknown"])
    name = tree.func.id
    args = [ast.literal_eval(a) for a in tree.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in tree.keywords}
    new = [call]
    if kind == "drop":
        new = []
    elif kind == "dup":
        new = [call, call]
    elif kind == "value" and (args or kwargs):
        if kwargs:
            k = rng.choice(sorted(kwargs))
            kwargs[k] = other_value(kwargs[k], rng)
        else:
            j = rng.randrange(len(args))
            args[j] = other_value(args[j], rng)
        new = [render(name, args, kwargs)]
    elif kind == "type" and kwargs:
        k = rng.choice(sorted(kwargs))
        v = kwargs[k]
        kwargs[k] = str(v) if not isinstance(v, str) else (len(v) if v else None)
        new = [render(name, args, kwargs)]
    elif kind == "missing" and kwargs:
        del kwargs[rng.choice(sorted(kwargs))]
        new = [render(name, args, kwargs)]
    elif kind == "extra":
        kwargs["bogus_arg"] = 1
        new = [render(name, args, kwargs)]
    elif kind == "positional" and kwargs:
        new = [render(name, args + list(kwargs.values()), {})]
    elif kind == "unknown":
        new = [render(name + "_nope", args, kwargs)]
    else:
        return None
    turns = [list(c) for c in gt]
    turns[t] = turns[t][:i] + new + turns[t][i + 1:]
    return (f"{kind} turn {t} call {i}", turns)


def other_value(v, rng):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + rng.choice([1, -1, 100])
    if isinstance(v, float):
        return round(v * rng.choice([0.5, 1.5, -1.0]), 3)
    if isinstance(v, str):
        return rng.choice([v + "_x", v.upper(), "", "no_such_" + v[:8]])
    if isinstance(v, list):
        return v[:-1] if v else ["x"]
    if isinstance(v, dict):
        return {}
    return None


def render(name, args, kwargs):
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


if __name__ == "__main__":
    main()
