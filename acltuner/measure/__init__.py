"""Measuring configurations of a task, below the tuner: the Runner protocol
and its Result; a launcher's runner (this machine, qemu or a board over ssh,
launcher_runner) and how its launcher is opened (launchers).  A farm's runner
is acltuner.farm.dispatch.FarmRunner."""
