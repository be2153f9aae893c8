"""Experiments: measured runs and what can honestly be concluded from them.

- `measure`: the one measured-run loop (warm-ups, interleaved rounds, stop, endings).
- `stats`: medians, spread, bootstrap confidence intervals, the one rule for a speed-up.
- `machine_load`: what else used the CPUs during the runs, said out loud.
- `sweeps`: `pg.sweep`, a grid of sizes and settings with its table, plots and explain().
- `presets`: the ready-made graphs of the demo, CLI, benchmarks and notebooks.
"""
