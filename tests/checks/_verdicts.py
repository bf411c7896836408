"""What the checker tests assert of a verdict: a status that exists, or a wrong answer named as such."""
from mha.checks import check


def status_of(label, answer):
    """The verdict of ``answer``, after asserting that its status is one the checkers give."""
    verdict = check(label, answer)
    assert verdict.status in ("correct", "wrong", "not done")
    return verdict


def wrong(label, answer, phrase, **options):
    """The verdict of ``answer``, after asserting that it is "wrong" and that its message says ``phrase``."""
    v = check(label, answer, **options)
    assert v.status == "wrong", v
    assert phrase in v.message, v.message
    return v
