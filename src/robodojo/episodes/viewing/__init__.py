"""Episodes in Rerun: ``robodojo view`` (an episode.mcap as a .rrd file or in a viewer) and the live view of
``--view`` (an episode as it runs). One job per module:

* :mod:`~robodojo.episodes.viewing.episode_log`: which entity shows what, on a timeline of simulation time;
* :mod:`~robodojo.episodes.viewing.convert`: an episode.mcap onto a recording;
* :mod:`~robodojo.episodes.viewing.live`: a watcher of a running episode's record, queued off the control thread;
* :mod:`~robodojo.episodes.viewing.sinks`: files, viewers and gRPC servers; live targets;
* :mod:`~robodojo.episodes.viewing.analytics`: Rerun's usage analytics, turned off before any of that;
* :mod:`~robodojo.episodes.viewing.settings`: config/view.yaml.

This package's own import is light (no Rerun): the runner reads :data:`VIEW_ENV` to learn whether to import the rest.
"""

from __future__ import annotations

VIEW_ENV = "ROBODOJO_VIEW"  #: the live target of every episode of a process and of its children ("" or unset: none)
