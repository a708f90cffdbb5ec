"""The code-cell agent (seed 000): one python(code) tool, a robo object, cells sharing one kernel namespace."""
