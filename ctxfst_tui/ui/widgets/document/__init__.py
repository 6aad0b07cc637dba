"""The Document view's panes: the document tree, the source view and the overview."""
