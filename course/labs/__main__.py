"""``python -m course.labs``: regenerate the labs' source notebooks (then ``course build-release``)."""
from .build import write_all

if __name__ == "__main__":  # pytest's doctest collection imports this module too: write nothing then
    for path in write_all():
        print(path)
