"""One ``id`` per exercise body: the 2nd, 3rd... exercise of a page gets ``exercise-content-2``...

Upstream gap: sphinx-exercise 1.2.1 (ExerciseDirective.run) gives every exercise's body section
ids=["exercise-content"], so a page with two exercises repeats an id. Nothing links to these ids
(each exercise has its own label); this post-transform, in the HTML build only, numbers them.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

EXERCISE_ID = "exercise-content"


class NumberExerciseIds(SphinxPostTransform):
    default_priority = 900  # after sphinx-exercise's own post-transforms (priorities 5 to 22)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        sections = [s for s in self.document.findall(nodes.section) if EXERCISE_ID in s["ids"]]
        for count, section in enumerate(sections[1:], start=2):
            section["ids"] = [f"{EXERCISE_ID}-{count}" if i == EXERCISE_ID else i for i in section["ids"]]


def setup(app: Sphinx) -> None:
    app.add_post_transform(NumberExerciseIds)
