"""Analyses over pto IR shared by the frontend, the passes and the interpreter."""
