"""`acltuner report`: a tuning as pictures, in one self-contained folder.

gather (the plan and its records as tables), cost_fit (the cost model refitted
from the records), model_time (the whole model's time by op kind) hold the
data; figures draws it with matplotlib (imported only here, by this command);
page writes index.html; build puts them together with summary.json.
"""
