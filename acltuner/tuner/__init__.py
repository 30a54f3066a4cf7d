"""The execution tuner: search space, ArmNN-rule default, cost model, search, records, plan."""
