"""The agent-facing robot API: the ``robo`` object, its results and its reference text, one room for every consumer.

Code cells call it through their kernel, the shell harness's base commands build on it, and a tool server would too.
Modules: ``api`` (:class:`~robodojo.agents.robo.api.Robo`, one method per capability), ``results`` (the frozen
result types, loaded in the code-cell kernel as well: standard library and numpy only), ``reference`` (the API as
the model reads it, generated from the docstrings and checked at import, and the calls served by name), ``flange``
(the flange-to-TCP transform both poses are reported with) and ``call_log`` (every robo call as the record keeps it).

Nothing is imported here: the kernel process loads ``results`` without the motion and robot modules ``api`` needs.
"""
