"""``python -m course.labs``: write the labs' source notebooks (same as ``course build-sources <lab>...``)."""
from course.activities import ACTIVITIES
from course.assess.lab import Lab
from course.assess.notebook import write_sources

for path in write_sources([a for a in ACTIVITIES if isinstance(a, Lab)]):
    print(f"wrote {path}")
