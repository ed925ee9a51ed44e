"""Prompts of the classify strategy (mentions, then a choice per pair) and of the mentions strategy."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts.registry import VERSIONS, _set, template


__all__: list[str] = []

# --- the classify extraction (graphrag_got.extract.classify) ---
CLASSIFY_VERSION = "classify-v1"
VERSIONS["classify"] = CLASSIFY_VERSION

#: The answer the choice questions offer when no listed relation holds (its label is the last letter).
NO_RELATION = "none of these"


CLASSIFY_SYSTEM = template(
    "classify.system", CLASSIFY_VERSION, (
        "You read a text and answer short questions about the entities it names and the facts it states.\n"
        "Use only what the text says, no outside knowledge.\n\nENTITY CLASSES:\n${classes}\n\n"
        "RELATIONS (subject -> object):\n${relations}\n\n"
        "A question quotes a passage of the text and lists lettered statements about two of its entities. "
        'Answer with the letter of the statement the text states, or the letter of "${no_relation}" when it '
        "states none of them. Answer with the letter only."),
    required=("classes", "relations"),
    about="extraction (classify strategy), the shared prefix of every question: ${classes} one line per class, "
          "${relations} one line per relation; ${no_relation} the last option's words")
CLASSIFY_TEXT = template(
    "classify.text", CLASSIFY_VERSION, 'TEXT:\n"""\n${text}\n"""\n\n', required=("text",),
    about="classify strategy, the chunk that starts every question of it: ${text}")
CLASSIFY_MENTIONS = template(
    "classify.mentions", CLASSIFY_VERSION, (
        "List every entity of the classes above that the text names, one per line, as\n"
        "- <name exactly as the text writes it> (<class>)\n"
        "Use the fullest name the text gives. List each entity once. Skip common nouns that name nothing "
        "in particular."),
    about="classify strategy, the mentions question (the answer's names are held to spans of the text)")
CLASSIFY_CHOICE = template(
    "classify.choice", CLASSIFY_VERSION, 'PASSAGE: "${passage}"\nWhich of these does the text state?\n${options}',
    required=("passage", "options"),
    about="classify strategy, one pair's question: ${passage} where the two names meet; ${options} one line "
          "'<letter>. <statement>' per option")
#: The prompts of the classify strategy (their version keys its stored calls).
CLASSIFY_PROMPTS = (CLASSIFY_SYSTEM, CLASSIFY_TEXT, CLASSIFY_MENTIONS, CLASSIFY_CHOICE)


def class_lines(onto: Ontology) -> list[str]:
    """One line per class of ``onto``: ``- <name> (a kind of <parents>): <comment>``."""
    lines = []
    for cname, klass in onto.classes.items():
        kind = f" (a kind of {', '.join(klass.parents)})" if klass.parents else ""
        lines.append(f"- {cname}{kind}: {klass.comment}".rstrip(": "))
    return lines


def classify_system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every classify question: the classes and relations (names, meanings,
    domain and range), without properties or examples. It depends on the ontology only."""
    classes = class_lines(onto)
    relations = []
    for rel in onto.relations:
        sym = ", either direction" if rel.symmetric else ""
        relations.append(f"- {rel.name} ({' | '.join(rel.stated_domain)} -> {' | '.join(rel.stated_range)}{sym}): "
                         f"{rel.comment}".rstrip(": "))
    return _set(prompts).render(CLASSIFY_SYSTEM, classes="\n".join(classes), relations="\n".join(relations),
                                no_relation=NO_RELATION)


def classify_text_block(text: str, *, prompts: PromptSet | None = None) -> str:
    """The chunk, first in the user message so that every question of a chunk shares it."""
    return _set(prompts).render(CLASSIFY_TEXT, text=text)


def classify_mentions_task(*, prompts: PromptSet | None = None) -> str:
    """The mentions question (the answer's names are constrained to spans of the text)."""
    return _set(prompts).render(CLASSIFY_MENTIONS)


def classify_choice_question(passage: str, options: Sequence[tuple[str, str]], *,
                             prompts: PromptSet | None = None) -> str:
    """One pair's question: the passage where the two names meet, then the lettered statements."""
    return _set(prompts).render(CLASSIFY_CHOICE, passage=passage,
                                options="\n".join(f"{label}. {option}" for label, option in options))


__all__ += ["class_lines", "CLASSIFY_CHOICE", "CLASSIFY_MENTIONS", "CLASSIFY_PROMPTS", "CLASSIFY_SYSTEM", "CLASSIFY_TEXT",
            "CLASSIFY_VERSION", "NO_RELATION", "classify_choice_question", "classify_mentions_task",
            "classify_system_prompt", "classify_text_block"]  # fmt: skip


# --- the mentions extraction (graphrag_got.extract.mentions_only) ---
MENTIONS_VERSION = "mentions-v1"
VERSIONS["mentions"] = MENTIONS_VERSION
MENTIONS_SYSTEM = template(
    "mentions.system", MENTIONS_VERSION, (
        "You read texts and list the entities they name.\nUse only what the text says, no outside knowledge.\n\n"
        "ENTITY CLASSES:\n${classes}${examples}"),
    required=("classes",),
    about="extraction (mentions strategy), the shared prefix of every call: ${classes} one line per class; "
          "${examples} the entities of the ontology's annotated examples (empty without examples)")
MENTIONS_BATCH = template(
    "mentions.batch", MENTIONS_VERSION, (
        "${texts}For each text, list every entity of the classes above that it names. Answer text by text: "
        "the line \"## TEXT <number>\", then one line per entity, as\n"
        "- <name exactly as that text writes it> (<class>)\n"
        "Use the fullest name the text gives. List each entity once per text. Skip common nouns that "
        "name nothing in particular."),
    required=("texts",),
    about="mentions strategy, a question over several short chunks: ${texts} the chunks, each as 'TEXT <n>:' and "
          "the text in triple quotes (a question over one chunk is classify.text and classify.mentions)")
#: The prompts of the mentions strategy (their version keys its stored answers).
MENTIONS_PROMPTS = (MENTIONS_SYSTEM, MENTIONS_BATCH, CLASSIFY_TEXT, CLASSIFY_MENTIONS)


def mentions_system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every mentions question: the entity classes (names and meanings) and the
    entities of the ontology's annotated examples; no relation is asked. It depends on the ontology only."""
    classes = class_lines(onto)
    examples = []
    for example in onto.examples:  # the ontology's annotated examples, their entities only
        examples += ["", "EXAMPLE TEXT:", f'"""\n{example.text}\n"""', "Its entities:"]
        examples += [f"- {e.name} ({e.class_name})" for e in example.entities]
    return _set(prompts).render(MENTIONS_SYSTEM, classes="\n".join(classes),
                                examples="\n" + "\n".join(examples) if examples else "")


def mentions_section(n: int) -> str:
    """The line that opens the answer for text ``n`` of a question with several texts."""
    return f"## TEXT {n}\n"


def mentions_user_prompt(texts: Sequence[str], *, prompts: PromptSet | None = None) -> str:
    """One question over one or several chunks: the texts, then the task (names constrained to spans)."""
    if len(texts) == 1:
        return classify_text_block(texts[0], prompts=prompts) + classify_mentions_task(prompts=prompts)
    blocks = "".join(f'TEXT {n}:\n"""\n{text}\n"""\n\n' for n, text in enumerate(texts, 1))
    return _set(prompts).render(MENTIONS_BATCH, texts=blocks)


__all__ += ["MENTIONS_BATCH", "MENTIONS_PROMPTS", "MENTIONS_SYSTEM", "MENTIONS_VERSION", "mentions_section",
            "mentions_system_prompt", "mentions_user_prompt"]  # fmt: skip
