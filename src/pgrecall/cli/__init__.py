"""The command line: `root` registers every group; `common` holds the helpers they share."""
