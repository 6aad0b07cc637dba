"""The workbench screen: layout, tabs, opening, cross-highlighting, and one controller per feature."""
