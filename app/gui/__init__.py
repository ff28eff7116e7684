"""Hearth's desktop app (PySide6): the only package that imports Qt.

Start it with `app.gui.launch.run` (what `hearth gui` calls); the window is `app.gui.main_window`, its areas'
controllers are in `app.gui.controllers`. This file imports nothing, so importing a module of the package
never runs another one first.
"""
