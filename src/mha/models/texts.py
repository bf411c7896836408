"""Texts written for the real-heads chapter (book/09_real_heads.md) and its benchmark.

``PARAPHRASES`` is a small task for a sentence encoder. Each item is
``(anchor, paraphrase, distractor)``: the paraphrase says the same thing in
other words; the distractor shares many words with the anchor but means
something else. An encoder "gets an item right" when the anchor's embedding
is closer (by cosine) to the paraphrase than to the distractor. Half the
distractors swap roles or flip a word (word order and meaning matter); the
other half reuse a word in another sense (the topic matters).

``STORY`` is a short text on which a causal model's perplexity is measured.
"""

__all__ = ["PARAPHRASES", "STORY", "MAP_SENTENCE"]

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
