"""`python -m acltuner.cli`: the command line without the installed script."""
from acltuner.cli import main

main()
