"""The execution tuner: search space, cost model, search and records; what it
chooses is written as a plan (acltuner.plan), against ArmNN's rules (acltuner.armnn_default)."""
