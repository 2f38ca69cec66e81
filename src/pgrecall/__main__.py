"""`python -m pgrecall` = the `pgrecall` command."""

from pgrecall.cli.root import main

main()
