"""People, the character memory (issue 43; PyraVid's character memory, M3-Agent): the faces in
a clip's sampled frames and the voices in its speech become appearances of identities —
each new usable face or voice joins the nearest identity of its kind under the measured
threshold (``FACE_MATCH``, ``VOICE_MATCH``) or starts one, in the clip's own transaction
(the real-time tier); ``edge build`` re-clusters with scikit-learn, joins a face and a voice
that keep appearing together, and suggests names; the user enrols, names, merges and forgets.

Below ingest and build, above the store. Modules, in reading order:

- :mod:`~edge.people.tier`: whether a profile runs the character tier, its settings, and
  the models it loads (:class:`PeopleTier`).
- :mod:`~edge.people.observe`: a clip's faces (a few frames, deduplicated into one group per
  person) and a source's voice turns with their words, before anything is stored.
- :mod:`~edge.people.match`: the pure part — grouping vectors (agglomerative, average
  linkage) and choosing the identity a group joins.
- :mod:`~edge.people.online`: the appearances of one clip, written inside its transaction;
  the face crops saved beside the keyframes once it is committed.
- :mod:`~edge.people.enrol`: ``edge people add``: photos and recordings → enrolled
  appearances, refused with a clear message when unusable.
- :mod:`~edge.people.rebuild`: ``edge build``'s pass: re-cluster, join faces and voices,
  suggest names.
- :mod:`~edge.people.transcript`: a clip's transcript as ``Alice: ...`` lines.
"""

from edge.people.tier import PeopleTier, characters_enabled

__all__ = ["PeopleTier", "characters_enabled"]
