"""`python -m pgrecall` = the `pgrecall` command."""

from pgrecall.cli import main

main()
