"""The workflow layer: what the Snakemake rules ask of the library.

- :mod:`.plan`: :class:`~.plan.Plan` turns a config into dataset roles, the (model, dataset)
  combinations that run, the reasons for those that do not, thread claims and the final
  targets;
- :mod:`.checks`: the config checks that run before any job.
"""
