"""The main window's controllers: one per area (workspaces, documents, watched folders, conversations,
opening sources, hardware, the chat model, settings).

Each one takes the user's requests from the widgets, runs the work through `Operations` (jobs on
executors) and shows the results; the window keeps the layout, the menus and the wiring between them.
"""
