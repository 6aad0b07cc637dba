"""The dialogs the workbench pushes: confirm, diff, entity edit, model settings, proposals, recovery, help, quit."""
