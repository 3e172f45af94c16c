"""Subcommands for the later stages: optimize, verify, report, reintegrate, auto. Thin: parse, call, print."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .registry import at_least_one, at_least_zero, command, count_from_zero, positive


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    o = sub.add_parser("optimize", help="optimize an MEP's kernel in verified rounds")
    o.add_argument("mep")
    _optimize_options(o)
    v = sub.add_parser("verify", help="check the verified variants again on the application's captured data")
    v.add_argument("mep")
    v.add_argument("--top", type=at_least_one, default=None, metavar="N",
                   help="stop once the N fastest variants that pass are found (default: check all)")
    v.add_argument("--jobs", type=at_least_one, help="parallel builds (default: CPU cores)")
    r = sub.add_parser("report", help="markdown and HTML report of an optimization, with a plot")
    r.add_argument("mep")
    r.add_argument("--json", action="store_true", help="print the report's facts as one JSON object (writes no files)")
    g = sub.add_parser("reintegrate", help="splice the winning variant back into the application")
    g.add_argument("mep")
    g.add_argument("--variant", default="best")
    g.add_argument("--tree", help="application tree (default: the one recorded in mep.toml)")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--diff", metavar="FILE", help="write a unified diff (default: print it)")
    mode.add_argument("--in-place", action="store_true", help="write atomically with a backup, build, test, roll back on failure")
    g.add_argument("--build-cmd")
    g.add_argument("--test-cmd")
    g.add_argument("--force", action="store_true", help="replace the kernel even if it changed since extraction")
    g.add_argument("--restore", action="store_true",
                   help="put back the originals of an interrupted --in-place reintegration (from its backup)")
    g.add_argument("--cmd-timeout", type=positive, default=1800.0, help="seconds before a build or test command is killed")
    a = sub.add_parser("auto", help="scan, extract the top hotspots, optimize, reintegrate as one diff")
    a.add_argument("tree")
    a.add_argument("--top", type=at_least_one, default=3)
    a.add_argument("--profile")
    a.add_argument("--work", default="s2s-work", help="directory for the MEPs")
    a.add_argument("--diff", metavar="FILE", default="s2s-auto.diff")
    a.add_argument("--kernels", help="comma-separated kernel names instead of the top hotspots")
    a.add_argument("-D", "--define", action="append", metavar="NAME=VALUE")
    a.add_argument("--build-cmd", help="with --run-cmd: builds the application (in a copy) to capture its data")
    a.add_argument("--run-cmd", help="with --build-cmd: runs the application; auto is then capture-first: one timed run "
                                     "ranks the kernels, each top kernel is captured, optimized on its data, reintegrated, "
                                     "and the application rebuilt and rerun before and after")
    a.add_argument("--check-cmd", help="with --run-cmd: decides whether the optimized application's output is unchanged "
                                       "(exit 0); run in its copy with S2S_BEFORE_DIR, S2S_BEFORE_STDOUT, S2S_AFTER_STDOUT set")
    a.add_argument("--runs", type=at_least_one, default=3, help="alternated runs of the application before and after (default 3)")
    a.add_argument("--output-rtol", type=at_least_zero, default=1e-5,
                   help="without --check-cmd: relative tolerance on the numbers the application prints (default 1e-5)")
    a.add_argument("--cmd-timeout", type=positive, default=1800.0, help="seconds before a build or run command is killed")
    a.add_argument("--max-bytes", default="auto",
                   help="largest amount of buffer data one captured launch may hold, before and after (default auto: "
                        "8G, or a quarter of the free space where --work is when that is less)")
    a.add_argument("--sequences", action=argparse.BooleanOptionalAction, default=True,
                   help="with --run-cmd: capture the launch-bound host loops holding 10%% or more of the GPU time as "
                        "sequence MEPs and, where a CUDA Graph of one body period beats the loop on its replay "
                        "(instantiation included), make the loop that graph in the reintegrated copy (default: on)")
    _optimize_options(a)


def _optimize_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--proposer", default="builtin", choices=("builtin", "llm", "replay"))
    p.add_argument("--rounds", type=at_least_one,
                   help="at most N rounds (default: until --max-evals, --time-budget or the candidates run out)")
    p.add_argument("--patience", type=at_least_one,
                   help="stop after N rounds in a row without a gain (default: go on while candidates remain)")
    p.add_argument("--max-evals", type=at_least_one, default=30)
    p.add_argument("--time-budget", type=positive,
                   help="seconds after which no candidate is started, nor one that would end past them at the pace so far "
                        "(auto: counted from its start over every kernel, the top kernel first; time blocked while another "
                        "process holds the device is not counted)")
    p.add_argument("--patterns", help="pattern library file (default: per user)")
    p.add_argument("--no-patterns", action="store_true")
    p.add_argument("--llm-config")
    p.add_argument("--replay", help="JSON lines of recorded answers for --proposer replay")
    p.add_argument("--jobs", type=at_least_one, help="parallel builds (default: CPU cores)")
    p.add_argument("--wait", action="store_true", help="wait for another s2s optimize on the same MEP instead of exiting")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the one Nsight Compute run of the original and of the winner (done where ncu is installed)")
    c = p.add_argument_group("where evaluations run")
    c.add_argument("--cluster", default="local", metavar="local|dask|slurm|tcp://HOST:PORT",
                   help="local (default): this machine, one evaluation at a time; dask: a Dask worker per GPU of this "
                        "machine; slurm: Dask workers in Slurm jobs; tcp://...: a running Dask scheduler")
    c.add_argument("--workers", type=at_least_one, help="--cluster dask: worker processes (default: one per GPU, else 2)")
    c.add_argument("--partition", help="--cluster slurm: partition (default: cluster.toml, else Slurm's default)")
    c.add_argument("--account", help="--cluster slurm: account to charge")
    c.add_argument("--walltime", help="--cluster slurm: each job's time limit, HH:MM:SS (default 01:00:00)")
    c.add_argument("--gpus-per-job", type=count_from_zero, help="--cluster slurm: GPUs per job, one worker each (default 1; 0: none)")
    c.add_argument("--cluster-jobs", type=at_least_one, help="--cluster slurm: how many jobs (default 1)")
    c.add_argument("--shared-fs", action="store_true", default=None,
                   help="workers see this machine's files at the same paths (else the MEP's files travel with each task)")
    c.add_argument("--cluster-config", metavar="TOML", help="cluster settings (default ~/.config/s2s/cluster.toml)")
    c.add_argument("--max-retries", type=count_from_zero, default=2, help="tries more for an evaluation whose worker died (default 2)")



def options_from(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import os

    from s2s.optimize.loop import Options

    return Options(proposer=args.proposer, rounds=args.rounds, patience=args.patience, max_evals=args.max_evals,
                   time_budget_s=args.time_budget,
                   patterns=args.patterns, use_patterns=not args.no_patterns, llm_config=args.llm_config,
                   replay_file=args.replay, jobs=args.jobs or os.cpu_count() or 1, cluster=cluster_from(args),
                   wait_lock=args.wait, profile=not args.no_profile)


def cluster_from(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from s2s.base.errors import UserError
    from s2s.optimize.execution import ClusterOptions

    spec = args.cluster
    if spec not in ("local", "dask", "slurm") and not spec.startswith(("tcp://", "tls://")):
        raise UserError(f"unknown --cluster '{spec}'", hint="local, dask, slurm or tcp://host:port")
    if args.max_retries < 0:
        raise UserError("--max-retries must be 0 or more")
    return ClusterOptions(spec=spec, workers=args.workers, partition=args.partition, account=args.account,
                          walltime=args.walltime, gpus_per_job=args.gpus_per_job, jobs=args.cluster_jobs,
                          shared_fs=args.shared_fs, max_retries=args.max_retries, config=args.cluster_config)


def open_cluster(opts, console: Console):  # type: ignore[no-untyped-def]
    """The executor the options name, opened once (a cluster's dashboard link printed) and shared by every MEP."""
    from dataclasses import replace

    from s2s.optimize.execution import open_executor

    executor = open_executor(opts.cluster)
    if opts.cluster.spec != "local":
        console.print(f"cluster: {executor.describe()}", highlight=False)
    return executor, replace(opts, executor=executor)


@command("optimize")
def _optimize(args: argparse.Namespace, console: Console) -> int:
    from s2s.optimize.loop import optimize
    from s2s.optimize.progress import line

    def show(ev: dict[str, object]) -> None:
        console.print(line(ev), highlight=False, markup=False)

    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=Console(stderr=True))
        task = bar.add_task("optimizing", total=args.max_evals)

        def tick(ev: dict[str, object]) -> None:
            if ev.get("kind") == "stop":
                show(ev)
                return
            bar.update(task, completed=int(ev["evals"]),  # type: ignore[call-overload]
                       description=f"round {ev['round']}  {ev['candidate']}  best {float(ev['best']):.2f}x")  # type: ignore[arg-type]
            show(ev)

        executor, opts = open_cluster(options_from(args), console)
        with executor, bar:
            out = optimize(args.mep, opts, progress=tick)
    else:
        executor, opts = open_cluster(options_from(args), console)
        with executor:
            out = optimize(args.mep, opts, progress=show)
    console.print(f"best: {out.best_id or 'none'} {out.best_speedup:.2f}x ({out.best_origin or 'the original'}); "
                  f"{out.evaluations} evaluations, best after {out.evals_to_best}; stopped: {out.stopped}"
                  + "".join(f" ({n})" for n in out.notes), highlight=False)
    return 0 if out.best_id and out.best_speedup > 1.0 else 1


@command("verify")
def _verify(args: argparse.Namespace, console: Console) -> int:
    from s2s.capture.verify import Checked, verify

    def show(c: Checked) -> None:
        verdict = "ok" if c.verdict == "ok" else f"[red]FAILED[/] ({c.verdict}): {escape(c.message)}"
        console.print(f"  {c.id} {c.speedup:.2f}x {escape(c.origin)}: {verdict}" + (" (checked earlier)" if c.earlier else ""),
                      highlight=False)

    out = verify(args.mep, top=args.top, jobs=args.jobs, report=show)
    failed = sum(c.verdict != "ok" for c in out.checked)
    console.print(f"on the captured data ({escape(out.capture)}): {len(out.checked) - failed} passed, {failed} failed",
                  highlight=False)
    best = out.best  # checked: verify goes fastest first and always reaches it
    if best is None:
        console.print("best: none; no verified variant passed on the captured data", highlight=False)
        return 1
    console.print(f"best: {best.id} {best.speedup or 0:.2f}x ({escape(best.origin)}), passed on the captured data",
                  highlight=False)
    return 0


@command("report")
def _report(args: argparse.Namespace, console: Console) -> int:
    from s2s.optimize.report import build_report, report_json

    if args.json:
        import json

        print(json.dumps(report_json(args.mep), indent=1))
        return 0
    md, html, png = build_report(args.mep)
    console.print(f"wrote {md}, {html}" + (f", {png}" if png else ""), highlight=False)
    return 0


@command("reintegrate")
def _reintegrate(args: argparse.Namespace, console: Console) -> int:
    from s2s.base.fsutil import atomic_write
    from s2s.reintegrate.splice import apply_in_place, plan, restore_interrupted

    if args.restore:
        for line in restore_interrupted(Path(args.mep), args.tree):
            print(line, file=sys.stderr)
        return 0
    p = plan(args.mep, args.variant, args.tree, args.force)
    for note in p.notes:
        print(f"note: {note}", file=sys.stderr)
    for manual in p.manual:
        print(f"by hand: {manual}", file=sys.stderr)
    if args.in_place:
        for line in apply_in_place(p, args.build_cmd, args.test_cmd, args.cmd_timeout):
            print(line, file=sys.stderr)
        print(f"reintegrated into {', '.join(str(f) for f, (o, n) in p.files.items() if o != n)}", file=sys.stderr)
        return 0
    diff = p.diff()
    if args.diff:
        atomic_write(Path(args.diff), diff)
        print(f"wrote {args.diff}", file=sys.stderr)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(diff)
    return 0


@command("auto")
def _auto(args: argparse.Namespace, console: Console) -> int:
    from s2s.auto import run_auto
    from s2s.base.errors import UserError

    overrides = dict(d.split("=", 1) for d in (args.define or []))
    if bool(args.build_cmd) != bool(args.run_cmd):
        raise UserError("--build-cmd and --run-cmd go together: both are needed to capture the application's data")
    if args.check_cmd and not args.run_cmd:
        raise UserError("--check-cmd judges the application's output after its --run-cmd: give --build-cmd and --run-cmd "
                        "too, or leave --check-cmd out")
    if args.check_cmd and args.profile:  # with --profile the application is never rerun: the check would be ignored
        raise UserError("--check-cmd judges the application rerun by capture-first auto, which --profile turns off: "
                        "leave out --profile or --check-cmd")
    if args.run_cmd and not args.profile:
        return _auto_app(args, console, overrides)
    executor, opts = open_cluster(options_from(args), console)
    with executor:
        result = run_auto(args.tree, top=args.top, profile=args.profile, work=Path(args.work), diff_path=Path(args.diff),
                          options=opts, kernels=args.kernels.split(",") if args.kernels else None,
                          overrides=overrides, log=lambda s: console.print(s, highlight=False),
                          app=(args.build_cmd, args.run_cmd) if args.run_cmd else None, app_timeout=args.cmd_timeout)
    table = Table(title="s2s auto")
    for col in ("kernel", "where", "MEP", "winner", "verified speedup", "status"):
        table.add_column(col)
    for row in result.rows:
        table.add_row(*row)
    console.print(table)
    for row in result.rows:
        print(f"{row[0]} ({row[1]}): {row[5]}; winner {row[3]} at {row[4]}")
    console.print(f"combined diff: {args.diff}  (apply with `git apply {args.diff}` or `patch -p1 < {args.diff}`)", highlight=False)
    return 0 if result.any_win else 1


def _auto_app(args: argparse.Namespace, console: Console, overrides: dict[str, str]) -> int:
    """`s2s auto TREE --build-cmd B --run-cmd R`: capture first (s2s.auto.run_auto_app)."""
    from s2s.auto import run_auto_app
    from s2s.capture import parse_bytes

    if args.runs < 1:
        from s2s.base.errors import UserError

        raise UserError(f"--runs {args.runs}: at least 1")
    result = run_auto_app(args.tree, args.build_cmd, args.run_cmd, top=args.top, work=Path(args.work),
                          diff_path=Path(args.diff), options=options_from(args),
                          kernels=args.kernels.split(",") if args.kernels else None, overrides=overrides,
                          check_cmd=args.check_cmd, runs=args.runs, output_rtol=args.output_rtol,
                          log=lambda s: console.print(s, highlight=False, markup=False), timeout=args.cmd_timeout,
                          max_bytes=None if args.max_bytes == "auto" else parse_bytes(args.max_bytes),
                          with_sequences=args.sequences)
    prof = Table(title=f"measured profile ({result.profile_how})")
    for col in ("kernel", "launches", "GPU ms", "captured launch"):
        prof.add_column(col)
    for k in result.profile:
        prof.add_row(escape(str(k["kernel"])), str(k["launches"]), f"{k['total_ms']:.3f}", str(k["steady_launch"]))
    console.print(prof)
    table = Table(title="s2s auto (capture first)")
    for col in ("kernel", "MEP", "winner", "speedup on captured data", "status"):
        table.add_column(col)
    for r in result.kernels:
        table.add_row(escape(r["kernel"]), escape(r["mep"]), escape(r["winner"] or "-"),
                      f"{r['speedup']:.2f}x" if r["speedup"] else "-", escape(r["status"]))
    console.print(table)
    if result.sequence_results:
        loops = Table(title="host loops of launches (sequences)")
        for col in ("loop", "launches", "GPU share", "form", "speedup on the replay", "status"):
            loops.add_column(col)
        for r in result.sequence_results:
            loops.add_row(escape(r["loop"]), str(r["launches"]), f"{100 * r['gpu_share']:.0f}%", r["form"] or "-",
                          f"{r['speedup']:.2f}x" if r["speedup"] else "-", escape(r["status"]))
        console.print(loops)
    app = result.app
    if "error" in app:
        console.print(f"application: {app['error']}", highlight=False, markup=False)
    elif app.get("remeasured") is False:
        console.print(f"application wall time: {app['why']}", highlight=False, markup=False)
    elif app:
        console.print(f"application wall time: {app['median_before_s']:.3f} s before, {app['median_after_s']:.3f} s after "
                      f"(median of {len(app['wall_before_s'])} alternated runs each)", highlight=False)
        console.print(f"output unchanged: {'yes' if app['output_unchanged'] else 'NO'} ({app['how']})", highlight=False,
                      markup=False)
    gpu = result.gpu
    if gpu.get("ms_after") is not None:
        console.print(f"application GPU time: {gpu['ms_before']:.3f} ms before, {gpu['ms_after']:.3f} ms after ({gpu['how']})",
                      highlight=False, markup=False)
    console.print(f"combined diff: {args.diff}; report: {Path(args.work) / 'auto-report.json'}", highlight=False)
    return 0 if result.any_win and app.get("output_unchanged") else 1
