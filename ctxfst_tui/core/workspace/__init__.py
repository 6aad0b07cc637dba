"""Many documents edited together: which files are documents, the Workspace, undo, entity operations, fixes, the disk watcher, the journal of unsaved edits and the one safe writer."""
