"""The commands' work, above the tuner, the farm and the runtime: a tune with
its launcher or farm and its in-context check (tune, farm_tune), a plan's run
(run), a plan edited by hand (plan_edit), a machine's doctor (doctor).  The
command line only parses and prints."""
