"""The execution tuner: search space, cost model, search and records; what it
chooses is written as a plan (acltuner.plan), against ArmNN's rules (acltuner.armnn_default)."""

# The searches of search.py; "exhaustive" ignores the budget, for benchmarks only.
SEARCH_STRATEGIES = ("xgb", "random", "exhaustive")
# What a tune can be asked for: a search within the budget, or ArmNN's rules unmeasured.
TUNE_STRATEGIES = tuple(s for s in SEARCH_STRATEGIES if s != "exhaustive") + ("default",)
