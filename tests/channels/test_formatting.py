"""Model Markdown becomes HTML that Telegram accepts, in chunks that fit one message."""

from __future__ import annotations

import random
import re

import pytest

from palui.channels.formatting import (
    split_for_telegram,
    to_plain_text,
    to_telegram_html,
)
from palui.ports import Part
from tests.fakes.telegram_entities import parse_text


def accepted_by_telegram(html: str) -> str:
    """The text Telegram would show; raises like Telegram on bad or unbalanced tags."""
    return parse_text(html, "HTML").text


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def random_markdown(rng: random.Random, length: int) -> str:
    pieces = ["*", "**", "_", "__", "~~", "`", "```", "```py\n", "[", "]", "(", ")", "<", ">"]
    pieces += ["&", "#", "# ", "- ", "> ", "1. ", "\\", "\n", "\n\n", " ", "https://a.b/c_d"]
    pieces += ["word", "snake_case", "é", "😀", "'", '"', "javascript:x", "&amp;", "<b>"]
    return "".join(rng.choice(pieces) for _ in range(length))


# --- to_telegram_html -------------------------------------------------------------------


def test_bold_italic_strike_and_code_become_tags() -> None:
    html = to_telegram_html("**bold** __also__ *it* _em_ ~~gone~~ `code` ***both***")

    assert html == (
        "<b>bold</b> <b>also</b> <i>it</i> <i>em</i> <s>gone</s> <code>code</code> "
        "<b><i>both</i></b>"
    )


def test_snake_case_words_and_arithmetic_stars_stay_literal() -> None:
    text = "call my_helper_fn with 2 * 3 * 4 from a_b_c.py"

    assert to_telegram_html(text) == text


def test_html_special_characters_are_escaped() -> None:
    assert to_telegram_html('a < b && c > d "q" <b>x</b>') == (
        'a &lt; b &amp;&amp; c &gt; d "q" &lt;b&gt;x&lt;/b&gt;'
    )


def test_code_block_is_not_formatted_inside() -> None:
    markdown = "Try:\n```python\nx = a**2 * _b_ < 3 & [y](z)\n```\ndone"

    assert to_telegram_html(markdown) == (
        "Try:\n"
        '<pre><code class="language-python">x = a**2 * _b_ &lt; 3 &amp; [y](z)</code></pre>\n'
        "done"
    )


def test_inline_code_is_not_formatted_inside() -> None:
    assert to_telegram_html("run `rm **/*.pyc && ls <dir>`") == (
        "run <code>rm **/*.pyc &amp;&amp; ls &lt;dir&gt;</code>"
    )


def test_unclosed_code_block_runs_to_the_end_without_language() -> None:
    assert to_telegram_html("```\nline **1**\n\nline 2") == "<pre>line **1**\n\nline 2</pre>"


def test_links_with_safe_schemes_become_anchors() -> None:
    html = to_telegram_html('[docs](https://ex.org/a_b?x=1&y="2") and <tg://resolve?domain=x>')

    assert html == (
        '<a href="https://ex.org/a_b?x=1&amp;y=&quot;2&quot;">docs</a> and '
        '<a href="tg://resolve?domain=x">tg://resolve?domain=x</a>'
    )


def test_links_with_other_schemes_stay_plain_text() -> None:
    html = to_telegram_html("[click](javascript:alert(1)) [file](./notes.md)")

    assert "<a" not in html
    assert html == "click (javascript:alert(1)) file (./notes.md)"


def test_bare_urls_keep_their_underscores() -> None:
    text = "see https://example.org/some_path_here/__init__.py now"

    assert to_telegram_html(text) == text


def test_headings_become_bold_and_bullets_become_dots() -> None:
    markdown = "# Plan\n### Steps ###\n- first\n* second\n  + nested\n1. one\n2) two"

    assert to_telegram_html(markdown) == (
        "<b>Plan</b>\n<b>Steps</b>\n• first\n• second\n  • nested\n1. one\n2) two"
    )


def test_quote_lines_become_one_blockquote() -> None:
    assert to_telegram_html("> said **this**\n> and that\nafter") == (
        "<blockquote>said <b>this</b>\nand that</blockquote>\nafter"
    )


@pytest.mark.parametrize(
    "markdown",
    ["**bold", "*a **b* c**", "__a *b__ c*", "~~x", "`open", "[a](b", "***x**", "_a_b_", "**"],
)
def test_unbalanced_markdown_still_yields_balanced_html(markdown: str) -> None:
    shown = accepted_by_telegram(to_telegram_html(markdown))

    assert re.sub("[^a-z]", "", shown) == re.sub("[^a-z]", "", markdown)


def test_random_input_never_raises_and_telegram_accepts_the_html() -> None:
    rng = random.Random(20240601)
    for _ in range(1500):
        markdown = random_markdown(rng, rng.randint(0, 60))
        html = to_telegram_html(markdown)
        accepted_by_telegram(html)  # raises on unbalanced or unsupported tags
        to_plain_text(markdown)


def test_plain_text_drops_markers_but_keeps_words_and_urls() -> None:
    plain = to_plain_text("# Title\n**bold** and `code` and [docs](https://ex.org)\n- item")

    assert plain == "Title\nbold and code and docs (https://ex.org)\n• item"


# --- split_for_telegram -----------------------------------------------------------------


def test_empty_or_whitespace_input_gives_no_chunks() -> None:
    assert split_for_telegram("") == []
    assert split_for_telegram("  \n\n\t ") == []


def test_short_reply_is_one_chunk_with_the_whole_rendering() -> None:
    markdown = "**Hi!**\n\nHere is a list:\n- a\n- b\n"

    assert split_for_telegram(markdown) == [
        Part(to_telegram_html(markdown.strip()), to_plain_text(markdown.strip()))
    ]


def test_10000_character_reply_splits_on_paragraphs_under_limit() -> None:
    paragraphs = [f"Paragraph {n}: " + "some **words** here & there. " * 10 for n in range(34)]
    markdown = "\n\n".join(paragraphs)
    assert len(markdown) > 10_000

    chunks = split_for_telegram(markdown)

    assert len(chunks) >= 3
    whole_paragraphs = {to_plain_text(p).strip() for p in paragraphs}
    for chunk in chunks:
        assert len(chunk.html) <= 4096 and len(chunk.plain) <= 4096
        accepted_by_telegram(chunk.html)
        assert {part.strip() for part in chunk.plain.split("\n\n")} <= whole_paragraphs
    assert squeeze("".join(c.plain for c in chunks)) == squeeze(to_plain_text(markdown))


def test_long_paragraph_splits_on_sentences_then_words() -> None:
    sentence = "This sentence has exactly forty-six characters. "
    markdown = sentence * 20 + " ".join(["word"] * 200)

    chunks = split_for_telegram(markdown, limit=300)

    assert all(len(c.html) <= 300 and len(c.plain) <= 300 for c in chunks)
    assert all(c.plain.endswith((".", "word")) for c in chunks)
    assert squeeze("".join(c.plain for c in chunks)) == squeeze(markdown)


def test_a_single_huge_word_is_split_hard() -> None:
    chunks = split_for_telegram("x" * 1000, limit=300)

    assert [len(c.plain) for c in chunks] == [300, 300, 300, 100]


def test_escaping_growth_counts_toward_the_limit() -> None:
    chunks = split_for_telegram("a < b & c " * 2000)

    assert all(len(c.html) <= 4096 for c in chunks)
    assert squeeze("".join(c.plain for c in chunks)) == squeeze("a < b & c " * 2000)


def test_split_code_block_is_closed_and_reopened_in_each_chunk() -> None:
    code = "\n".join(f"print({n}, 'x' * {n})  # **not bold**" for n in range(200))
    markdown = f"Here you go:\n\n```python\n{code}\n```\n\nThat's all."

    chunks = split_for_telegram(markdown, limit=1000)

    code_chunks = [c for c in chunks if "<pre>" in c.html]
    assert len(code_chunks) > 3
    for chunk in code_chunks:
        assert "<b>" not in chunk.html and len(chunk.html) <= 1000
        assert chunk.html.count('<pre><code class="language-python">') == 1
        assert chunk.html.count("</code></pre>") == 1
    assert chunks[0].plain == "Here you go:"
    assert "\n".join(c.plain for c in code_chunks).removesuffix("\n\nThat's all.") == code


def test_chunks_keep_order_and_lose_no_text() -> None:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    paragraphs = [
        " ".join(rng.choice(words) for _ in range(rng.randint(1, 120))) for _ in range(60)
    ]
    markdown = "\n\n".join(paragraphs)

    chunks = split_for_telegram(markdown, limit=500)

    assert "\n\n".join(c.plain for c in chunks).split() == markdown.split()


def test_random_input_splits_into_accepted_chunks_under_limit() -> None:
    rng = random.Random(99)
    for _ in range(200):
        markdown = random_markdown(rng, rng.randint(0, 400))
        limit = rng.randint(128, 400)
        for chunk in split_for_telegram(markdown, limit=limit):
            assert len(chunk.html) <= limit and len(chunk.plain) <= limit
            assert chunk.plain.strip()
            accepted_by_telegram(chunk.html)


def test_limit_too_small_for_any_message_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_for_telegram("hello", limit=10)


def test_emoji_count_double_towards_the_limit_as_telegram_counts_them() -> None:
    from palui.channels.formatting import telegram_length

    text = "\n\n".join(["😀" * 1500] * 4)  # 6000 code points, 12000 UTF-16 units
    chunks = split_for_telegram(text)
    assert all(telegram_length(chunk.html) <= 4096 for chunk in chunks)
    assert telegram_length("😀") == 2
