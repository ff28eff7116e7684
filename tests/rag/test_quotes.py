"""Supporting quotes on the real embedder and the demo documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.components import CHECK_WITH_CHAT
from rag.loaders import full_text, load
from rag.quotes import FALLBACK_PREFIX, align, split_units
from rag.service import Hearth, HearthConfig

DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo"


@pytest.fixture(scope="module")
def hearth(tmp_path_factory) -> Hearth:
    h = Hearth(HearthConfig(data_dir=tmp_path_factory.mktemp("quotes"), embed_threads=2, check_model=CHECK_WITH_CHAT))
    assert h.ingest([DEMO]).added == 3
    return h


def _check_offsets(quotes) -> None:
    for q in quotes:
        assert full_text(load(Path(q.source)))[q.start : q.end] == q.text


def test_split_units_trims_markers_and_keeps_rows():
    text = "- First item here.\n- Second: 28 days\nName | Rate\nA plain sentence. Another one!"
    units = [text[s:e] for s, e in split_units(text)]
    assert units == ["First item here.", "Second: 28 days", "Name | Rate", "A plain sentence.", "Another one!"]


def test_quote_with_the_fact_is_chosen_and_points_into_the_source(hearth):
    q = "What is the daily meal allowance for travel abroad?"
    s = align("The daily meal allowance for travel abroad is EUR 60.", q, hearth.search(q), embedder=hearth.embedder)
    assert not s.fallback
    assert "EUR 60 for travel abroad" in s.quotes[0].text
    assert s.quotes[0].source.endswith("travel-policy.pdf") and s.quotes[0].page == 2
    assert s.sentences[0].support == 0 and s.text.endswith("EUR 60 [1].")
    _check_offsets(s.quotes)


def test_unsupported_sentence_is_flagged_and_wrong_model_citation_replaced(hearth):
    q = "What should I do if my laptop is stolen?"
    hits = hearth.search(q)
    reply = "Call the IT service desk at extension 4400 immediately [3]. You must also file a police report within a week."
    s = align(reply, q, hits, embedder=hearth.embedder)
    first, second = s.sentences
    assert first.support is not None and "4400" in s.quotes[first.support].text
    assert hits[first.citation - 1].heading.endswith("Lost or stolen devices")
    assert "[3]" not in s.text or first.citation == 3  # the model's marker survives only if it agrees
    assert second.support is None and second.citation is None
    _check_offsets(s.quotes)


@pytest.mark.parametrize("reply", ["", "I don't know.", "Bananas are yellow and grow on trees in warm countries."])
def test_failed_reply_falls_back_to_the_best_quotes(hearth, reply):
    q = "How many days of annual leave do I get?"
    s = align(reply, q, hearth.search(q), embedder=hearth.embedder)
    assert s.fallback and s.text.startswith(FALLBACK_PREFIX)
    assert "28 days of annual leave" in s.quotes[0].text
    assert all(st.support is not None for st in s.sentences)
    _check_offsets(s.quotes)


def test_no_passages_means_no_quotes(hearth):
    s = align("Something.", "question?", [], embedder=hearth.embedder)
    assert s.quotes == [] and s.sentences[0].support is None and not s.fallback


def test_ask_returns_quotes_with_offsets_into_the_stored_text(hearth):
    from tests.fakes import ScriptedModel

    hearth._chat_model = ScriptedModel("Call the IT service desk at extension 4400. Also buy a new bicycle.")
    out = hearth.ask("What should I do if my laptop is stolen?").to_json()
    assert out["reply"].startswith("Call the IT service desk") and "[1]" in out["answer"]
    assert {"source", "page", "heading", "text", "start", "end"} <= set(out["quotes"][0])
    assert "4400" in out["quotes"][0]["text"]
    supports = [s["support"] for s in out["sentences"]]
    assert supports[0] == 0 and supports[1] is None  # the bicycle is not in the documents
    for q in out["quotes"]:  # the HTML passage text given to the model is tidied; offsets are not
        assert full_text(load(Path(q["source"])))[q["start"] : q["end"]] == q["text"]


def test_annotated_reply_keeps_markdown_cites_by_alignment_and_flags_the_rest():
    from rag.quotes import SentenceSupport, Support, annotated

    reply = "The allowance is **EUR 60** [4]. Run `ls -l`. You may also fly first class.\n\n```\nrm -rf /tmp/x\n```"
    support = Support("", [
        SentenceSupport("The allowance is **EUR 60**.", 0, 2),
        SentenceSupport("Run `ls -l`.", None, None),
        SentenceSupport("You may also fly first class.", None, None),
        SentenceSupport("rm -rf /tmp/x", None, None),
    ], [], False)
    shown = annotated(reply, support, unsupported=" (?)")
    assert shown.startswith("The allowance is **EUR 60** [2].")  # the model's [4] gave way to the alignment's
    assert "fly first class. (?)" in shown and "Run `ls -l`. (?)" in shown
    assert "```\nrm -rf /tmp/x\n```" in shown  # never marked inside code
    assert annotated(reply, Support("The documents say: …", [], [], True), unsupported=" (?)").startswith(
        "The allowance is **EUR 60**.")


def test_a_citation_written_as_a_word_leaves_its_sentence_a_subject(hearth):
    from rag.quotes import SentenceSupport, Support, annotated

    q = "What is the daily meal allowance for travel abroad?"
    s = align("[1] states that the daily meal allowance for travel abroad is EUR 60.", q, hearth.search(q),
              embedder=hearth.embedder)
    assert not s.fallback and s.text.startswith("The passage states that the daily meal allowance")
    assert s.text.endswith("EUR 60 [1].")
    reply = "According to the passage in [2], the allowance is EUR 60. [2] says so too."
    support = Support("", [SentenceSupport("According to the passage in, the allowance is EUR 60.", 0, 2),
                           SentenceSupport("says so too.", 0, 2)], [], False)
    assert annotated(reply, support, unsupported=" (?)") == (
        "According to the passage, the allowance is EUR 60 [2]. The passage says so too [2].")
    # A reply that wrote no citation as a word keeps its own words, even where they begin in lower case.
    plain = Support("", [SentenceSupport("states are listed in the annex.", 0, 1)], [], False)
    assert annotated("states are listed in the annex [1].", plain, unsupported=" (?)") == (
        "states are listed in the annex [1].")


def test_support_survives_json(hearth):
    from rag.quotes import Support

    q = "What should I do if my laptop is stolen?"
    s = align("Call the IT service desk at extension 4400. Buy a bicycle.", q, hearth.search(q), embedder=hearth.embedder)
    assert s.quotes and Support.from_json(s.to_json()) == s


@pytest.mark.parametrize(
    ("question", "passage", "reply", "borne_out"),
    [
        # "non-profit" is the question's word: the passage says "not-for-profit", which does not make the reply
        # any less borne out.
        ("Which US non-profit collects money on behalf of the project?",
         "Behind the project stands SPI, an American not-for-profit association that holds its money and assets.",
         "The US non-profit collects money on behalf of the project through the SPI association, which is known "
         "as a trusted organization.", True),
        # "i386" is the question's word too: the passage holding it bears out nothing the reply claims about it.
        ("In which future release will the project drop the i386 architecture?",
         "Installation images are built for amd64, arm64 and i386 with every stable release.",
         "The project will drop the i386 architecture in the squeeze release.", False),
    ],
)
def test_code_like_words_the_reply_repeats_from_the_question_are_no_evidence(hearth, question, passage, reply,
                                                                             borne_out):
    from rag.store import Hit

    hits = [Hit("project.md", None, "About the project", 0.3, passage, 0, len(passage), "project.md#0")]
    s = align(reply, question, hits, embedder=hearth.embedder)
    assert not s.fallback  # a passage this weak (0.3) does not stand in for the reply
    assert [sentence.support is not None for sentence in s.sentences] == [borne_out]


@pytest.mark.parametrize("reply", ["[4.2. How can I donate to the association?]",
                                   "The IBAN should be [4.2. How can I donate to the association?]."])
def test_a_reply_that_copies_a_heading_claims_nothing(hearth, reply):
    from rag.store import Hit

    text = ("4.2. How can I donate to the association?\nDonations pay for the servers and the yearly meeting. "
            "The donations page lists the ways to give.")
    hits = [Hit("club.md", None, "4. Money › 4.2. How can I donate to the association?", 0.6, text, 0, len(text),
                "club.md#3")]
    s = align(reply, "What IBAN should I use to donate to the association?", hits, embedder=hearth.embedder)
    assert s.fallback  # the passage's lines stand in for a reply that copied its title
    assert all("How can I donate" not in q.text for q in s.quotes)


def test_a_reply_whose_answer_is_a_citation_claims_nothing(hearth):
    from rag.store import Hit

    text = ("Donations to the association pay for the servers and the yearly meeting. The association's bank "
            "account is IBAN DE44 5001 0517 5407 3249 31, held at the Sparkasse.")
    hits = [Hit("club.md", None, "Money", 0.6, text, 0, len(text), "club.md#3")]
    question = "What IBAN should I use to donate to the association?"
    s = align("The IBAN to donate to the association is [1].", question, hits, embedder=hearth.embedder)
    assert s.fallback and "IBAN DE44" in s.text  # the passage's line stands in for a reply that names no IBAN
    s = align("Donations pay for the servers and the yearly meeting [1]. The IBAN to use is [1].", question, hits,
              embedder=hearth.embedder)
    assert [sentence.support is not None for sentence in s.sentences] == [True, False]
    s = align("The IBAN to donate to the association is DE44 5001 0517 5407 3249 31 [1].", question, hits,
              embedder=hearth.embedder)
    assert not s.fallback and s.sentences[0].support is not None  # the answer written out stands


def test_a_heading_alone_is_never_a_quote_for_the_question(hearth):
    q = "What is the daily meal allowance for travel abroad?"
    s = align("The daily meal allowance for travel abroad is EUR 60 [1].", q, hearth.search(q), embedder=hearth.embedder)
    assert len(s.quotes) == 4 and "EUR 60" in s.quotes[0].text  # every slot taken, by no heading
    def plain(text: str) -> str:
        return text.strip().lower().lstrip("0123456789. ")

    headings = {plain(p) for h in hearth.search(q) if h.heading for p in h.heading.split(" › ")}
    assert "meals and daily allowance" in headings  # the section's heading is a line of the passage too
    assert not any(plain(qt.text) in headings for qt in s.quotes)


def test_a_lead_in_line_brings_the_line_it_introduces_from_the_next_passage(hearth):
    from rag.store import Hit

    doc = "guide.html"
    first = ("Certbot creates trusted certificates for the web server. The certbot package brings the client. "
             "The Apache plugin of certbot edits the Apache configuration to serve the certificate, so we use it:")
    second = "# apt install python3-certbot-apache\n[...]\n# certbot --apache"
    other = ("Certificates from certbot are renewed by a timer. Certbot keeps its configuration in /etc/letsencrypt. "
             "Each certificate of certbot is valid for ninety days. The Apache web server serves the sites.")
    hits = [
        Hit(doc, None, "Certificates", 0.7, first, 0, len(first), "a"),
        Hit("other.html", None, "Renewal", 0.6, other, 0, len(other), "c"),
        Hit(doc, None, "Certificates", 0.5, second, len(first) + 2, len(first) + 2 + len(second), "b"),
    ]
    q = "Which package provides the certbot plugin that edits the Apache configuration?"
    s = align("I don't know.", q, hits, embedder=hearth.embedder)
    texts = [qt.text for qt in s.quotes]
    lead = texts.index(next(t for t in texts if t.endswith("so we use it:")))
    assert texts[lead + 1] == "# apt install python3-certbot-apache"  # shown right after what introduces it
    assert s.quotes[lead + 1].start == len(first) + 2  # a quote of its own, with its own exact offsets


def test_a_heading_is_not_a_quote_when_the_quotes_replace_the_reply_either(hearth):
    q = "What is the daily meal allowance for travel abroad?"
    hits = hearth.search(q)
    s = align("I don't know.", q, hits, embedder=hearth.embedder)
    assert s.fallback and "EUR 60" in " ".join(qt.text for qt in s.quotes)
    headings = {p.lower().lstrip("0123456789. ") for h in hits if h.heading for p in h.heading.split(" › ")}
    assert not any(qt.text.lower().lstrip("0123456789. ") in headings for qt in s.quotes)


def _hit(text: str, heading: str | None = None, source: str = "guide.html", start: int = 100, score: float = 0.6):
    from rag.store import Hit

    return Hit(source, None, heading, score, text, start, start + len(text), source + str(start))


def test_the_line_that_best_matches_the_question_is_quoted_with_the_sentences_around_it(hearth):
    text = ("A nice feature is the automated registering of DHCP clients in the DNS zone, so that each machine "
            "gets a meaningful name. Using this feature requires configuring the DNS server to accept updates "
            "from the DHCP server. The lease time is set in dhcpd.conf.\n\nBind keeps its zones in /etc/bind.")
    other = "Routers forward packets between networks. A firewall filters the packets that cross it."
    hits = [_hit(text, "DHCP and DNS"), _hit(other, "Routing", source="net.html", start=0, score=0.4)]
    q = "How can machines that get their address automatically also get a meaningful name in the DNS zone?"
    s = align("I don't know.", q, hits, embedder=hearth.embedder)
    first = s.quotes[0]
    assert first.text.startswith("A nice feature") and first.text.endswith("accept updates from the DHCP server.")
    assert text[first.start - 100 : first.end - 100] == first.text  # one span of the document, exact offsets
    assert not any("lease time" in qt.text and qt is not first for qt in s.quotes[:1])
    # Never across a paragraph break, and only the first line the question picked takes a sentence along.
    lone = align("I don't know.", "Where does Bind keep its zones?", hits, embedder=hearth.embedder)
    assert lone.quotes[0].text == "Bind keeps its zones in /etc/bind."
    assert sum(qt.text.count(". ") for qt in s.quotes[1:]) <= 1
    # The sentence before it too: here it names what "the script" is.
    text = ("Several tools keep a machine up to date. The first of these tools is apticron, in the package of the "
            "same name. The script runs every day and mails the administrator the list of installed packages "
            "that have newer versions waiting.\n\nUnattended upgrades install security updates.")
    hits = [_hit(text, "Keeping a System Up to Date"), _hit(other, "Routing", source="net.html", start=0, score=0.4)]
    q = "Which tool emails me every day the list of installed packages that have newer versions?"
    s = align("I don't know.", q, hits, embedder=hearth.embedder)
    assert s.quotes[0].text.startswith("The first of these tools is apticron")
    assert s.quotes[0].text.endswith("newer versions waiting.")
    assert text[s.quotes[0].start - 100 : s.quotes[0].end - 100] == s.quotes[0].text


def test_section_numbers_are_not_sentences_and_a_section_opening_with_this_names_its_title(hearth):
    text = ("1.2.2. The Debian Free Software Guidelines\nThis reference document defines which software is free "
            "enough to be included in Debian. The non-free section is not officially part of Debian.")
    assert [text[s:e] for s, e in split_units(text)][0] == "The Debian Free Software Guidelines"
    hits = [_hit(text, "1.2. The Foundation Documents › 1.2.2. The Debian Free Software Guidelines")]
    q = "Which document defines which software is free enough to be included in Debian?"
    s = align("I don't know.", q, hits, embedder=hearth.embedder)
    assert s.quotes[0].text.startswith("The Debian Free Software Guidelines\nThis reference document defines")
    assert text[s.quotes[0].start - 100 : s.quotes[0].end - 100] == s.quotes[0].text


def test_document_text_is_the_text_quote_offsets_point_into(hearth, tmp_path):
    from rag.errors import LoadError

    q = "What should I do if my laptop is stolen?"
    s = align("Call the IT service desk at extension 4400.", q, hearth.search(q), embedder=hearth.embedder)
    for quote in s.quotes:
        assert hearth.document_text(Path(quote.source))[quote.start : quote.end] == quote.text
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7 not really")
    with pytest.raises(LoadError) as err:
        hearth.document_text(broken)
    assert err.value.kind == "corrupt"
    with pytest.raises(LoadError):
        hearth.document_text(tmp_path / "missing.md")
