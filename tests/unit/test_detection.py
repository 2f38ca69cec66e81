"""ShortTextDetector: right on clear sentences, 'simple' when it should be, lazy and thread-safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pgrecall.detection.short_text import ShortTextDetector
from pgrecall.domain.language import Detection
from pgrecall.evaluation.detection_devset import load_jsonl

STEMMABLE = frozenset(
    [
        "ar",
        "hy",
        "eu",
        "ca",
        "da",
        "nl",
        "en",
        "et",
        "fi",
        "fr",
        "de",
        "el",
        "hi",
        "hu",
        "id",
        "ms",
        "ga",
        "it",
        "lt",
        "ne",
        "nb",
        "no",
        "pt",
        "ro",
        "ru",
        "sr",
        "hr",
        "bs",
        "es",
        "sv",
        "ta",
        "tr",
        "yi",
    ]
)
SAMPLE = load_jsonl(Path(__file__).resolve().parent.parent / "data" / "detection-sample.jsonl")
SENTENCES = [t for t in SAMPLE if len(t.text) >= 30]
TOO_SHORT = [t for t in SAMPLE if len(t.text) < 30]


@pytest.fixture(scope="module", autouse=True)
def _keep_models_resident() -> Iterator[None]:
    # Answers do not depend on the budget (the budget tests run in their own interpreters); with the
    # default one, the sample's 30 languages evict and reload each other's models for minutes.
    from pgrecall.detection.short_text import lingua_models

    models = lingua_models()
    budget = models.budget
    models.set_budget(100)
    yield
    models.set_budget(budget)


@pytest.fixture(scope="module")
def detector() -> ShortTextDetector:
    return ShortTextDetector(STEMMABLE)


def test_clear_sentences_get_their_language(detector: ShortTextDetector) -> None:
    stemmable = [t for t in SENTENCES if t.lang in STEMMABLE]
    right: Counter[str] = Counter(t.lang for t in stemmable if detector.detect(t.text).iso == t.lang)
    total: Counter[str] = Counter(t.lang for t in stemmable)
    assert sum(right.values()) >= 0.9 * sum(total.values())
    for lang, n in total.items():
        assert right[lang] >= n - 2, f"{lang}: {right[lang]}/{n}"


def test_too_short_is_simple(detector: ShortTextDetector) -> None:
    assert TOO_SHORT
    for t in TOO_SHORT:
        assert detector.detect(t.text) == Detection(None, None)
    assert detector.detect("") == Detection(None, None)


def test_languages_we_cannot_stem_are_simple(detector: ShortTextDetector) -> None:
    others = [t for t in SENTENCES if t.lang not in STEMMABLE]
    assert {t.lang for t in others} >= {"pl", "cs", "ja"}
    for t in others:
        assert detector.detect(t.text).iso is None, t.text


def test_restricted_codes_are_honoured() -> None:
    no_german = ShortTextDetector([c for c in STEMMABLE if c != "de"])
    for t in SENTENCES:
        if t.lang == "de":
            assert no_german.detect(t.text).iso != "de"
    only_german = ShortTextDetector(["de"])
    for t in SENTENCES:
        assert only_german.detect(t.text).iso in (None, "de")


def test_norwegian_is_reported_with_the_code_given() -> None:
    text = "Vi må huske å bestille billettene før prisene går opp igjen neste uke."
    assert ShortTextDetector(["no", "en"]).detect(text).iso in (None, "no")
    assert ShortTextDetector(["nb", "en"]).detect(text).iso in (None, "nb")


def test_malay_and_indonesian_share_one_stemmer() -> None:
    # lingua tells the two apart by vocabulary alone; whichever it prefers, the text is stemmed as
    # Indonesian, and a close call between them must not leave it 'simple'.
    detector = ShortTextDetector(["id", "ms", "en", "tr"])
    malay = "Kerajaan negeri akan membina lebih banyak rumah mampu milik untuk golongan berpendapatan rendah."
    indonesian = "Pemerintah daerah akan membangun lebih banyak rumah murah bagi warga berpenghasilan rendah."
    assert detector.detect(malay).iso == "id"
    assert detector.detect(indonesian).iso == "id"


# lingua's model cache is process-wide, so a fresh interpreter sees only what German and English load.
PROBE = """
import json, sys
from pgrecall.detection.short_text import ShortTextDetector, lingua_models
lingua_models().set_budget(int(sys.argv[2]), linger=0.0)
det = ShortTextDetector(sys.argv[1].split())
for text in json.loads(sys.stdin.read()):
    det.detect(text)
print(json.dumps(det.loaded_languages()))
"""


def _loaded_after(texts: list[str], budget: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, " ".join(STEMMABLE), str(budget)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    loaded: list[str] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_only_candidate_models_load() -> None:
    texts = [t.text for t in SENTENCES if t.lang in ("de", "en")]
    loaded = _loaded_after(texts, 100)
    # Short texts always meet their three closest Latin-script rivals in high accuracy, so German and
    # English bring a dozen or so languages over a whole sample; the budget bounds what stays resident.
    assert len(loaded) <= 16, loaded
    assert not {"ta", "hy", "el", "ru", "ar", "hi"} & set(loaded)


def test_high_accuracy_models_stay_within_the_budget() -> None:
    # Three texts per language already bring every rival in; more only reloads the same models.
    per_lang: Counter[str] = Counter()
    texts = []
    for t in SENTENCES:
        if t.lang in ("de", "en", "fr", "nl", "es") and per_lang[t.lang] < 3:
            per_lang[t.lang] += 1
            texts.append(t.text)
    for budget in (0, 2):
        assert len(_loaded_after(texts, budget)) <= budget


def test_rare_rivals_are_evicted_before_the_stores_languages() -> None:
    from pgrecall.detection.models import LinguaModels

    models = LinguaModels(["en", "de"], budget=2, linger=0.0)
    for _ in range(3):
        models.high_accuracy("Das ist ein kurzer Satz auf Deutsch.", ["de", "en"])
    models.high_accuracy("Dit is een korte zin in het Nederlands.", ["nl", "de"])
    assert models.resident() == ["de", "en"]
    assert models.unloads == 1


def test_a_store_meeting_eight_rivals_in_turn_loads_each_of_them_once() -> None:
    from pgrecall.detection.models import LinguaModels

    # Short English and German notes name rival languages in turn (docs/languages.md, "Memory"): once
    # each has loaded, further writes load nothing. A 130 MB cap kept about five and reloaded a model
    # on every write.
    models = LinguaModels(["en", "de", "la", "it", "fi", "nl", "lt", "sv"])
    rivals = ["de", "la", "it", "fi", "nl", "lt", "sv"]
    text = "Note 3 on Winterreifen im Oktober and drag."
    loads = []
    for _ in range(2):
        for first, second in zip(rivals, rivals[1:] + rivals[:1], strict=True):
            models.high_accuracy(text, ["en", first, second])
        loads.append(models.loads)
    assert loads[1] == loads[0] == 8


def test_function_words_bring_a_language_trigrams_missed(detector: ShortTextDetector) -> None:
    from pgrecall.detection.short_text import stopword_languages

    text = "Die Häuser am See sind im Winter kalt und still."
    # lingua's trigram models alone rank German 8th here (Danish first): its stop words bring it in.
    assert stopword_languages(text) == ["de"]
    assert detector.detect(text).iso == "de"
    # One function word makes its language a candidate (high accuracy still decides); a language far
    # below the best one does not.
    assert stopword_languages("Kubernetes pod restarts at noon") == ["da", "en"]  # 'at' is both
    assert stopword_languages("Kubernetes pod restarts") == []
    assert stopword_languages("Das ist nicht der Weg, und die Tür ist im Haus of the") == ["de"]
    assert stopword_languages("der die das und the of and") == ["de", "en"]


def test_rivals_linger_through_a_burst_then_go() -> None:
    from pgrecall.detection.models import LinguaModels

    now = [0.0]
    models = LinguaModels(["en", "de"], budget=1, ceiling=3, linger=30.0, clock=lambda: now[0])
    german, dutch = "Das ist ein kurzer Satz auf Deutsch.", "Dit is een korte zin in het Nederlands."
    for _ in range(3):
        models.high_accuracy(german, ["de", "en"])
    models.high_accuracy(dutch, ["nl", "de"])
    # Within the linger the rivals stay: the next text that meets them loads nothing.
    assert models.resident() == ["de", "en", "nl"]
    loads = models.loads
    now[0] = 20.0
    models.high_accuracy(dutch, ["nl", "de"])
    assert models.loads == loads and models.unloads == 0
    # Past the ceiling the least used goes at once, lingering or not.
    models.high_accuracy("Ceci est une courte phrase en français.", ["fr", "de"])
    assert len(models.resident()) == 3 and models.unloads == 1
    # Once the burst is over, back to the budget: the most used language stays.
    now[0] = 60.0
    models.reap()
    assert models.resident() == ["de"]


def _library_data_kb() -> int:
    """KB of lingua's library resident in this process, its read-only data mappings only."""
    import lingua.lingua  # type: ignore[import-not-found]

    library, total, counting = os.path.realpath(lingua.lingua.__file__), 0, False
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            fields = line.split()
            if not fields[0].endswith(":"):
                counting = fields[-1] == library and fields[1].startswith("r--")
            elif counting and fields[0] == "Rss:":
                total += int(fields[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux only")
def test_library_pages_read_by_loads_leave_and_come_back_intact() -> None:
    from pgrecall.detection.models import LinguaModels

    text = "Ceci est une courte phrase en français."
    models = LinguaModels(["fr", "it"], budget=8)
    first = {}
    for pair in (["fr", "it"], ["es", "pt"], ["de", "nl"]):
        first[tuple(pair)] = models.high_accuracy(text, pair)
        # Each load read its languages' compressed models from the library; none of those pages stays.
        assert _library_data_kb() < 1024
    # Unloaded, then loaded again from the library's pages: the same models, the same figures.
    models.set_budget(0, linger=0.0)
    assert models.resident() == []
    for pair, found in first.items():
        again = models.high_accuracy(text, pair)
        assert [c for c, _ in again] == [c for c, _ in found]
        assert [v for _, v in again] == pytest.approx([v for _, v in found], rel=1e-9)


def test_threads_agree_with_one_thread() -> None:
    texts = [t.text for t in SAMPLE] * 3
    alone = [ShortTextDetector(STEMMABLE).detect(x) for x in texts]
    shared = ShortTextDetector(STEMMABLE)
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(shared.detect, texts))
    # lingua sums log-probabilities in an order that may differ in the last bit between runs.
    assert [d.iso for d in together] == [d.iso for d in alone]
    for a, b in zip(together, alone, strict=True):
        if a.confidence is None or b.confidence is None:
            assert a.confidence is b.confidence
        else:
            assert a.confidence == pytest.approx(b.confidence, rel=1e-9)


def test_serbian_cyrillic_without_its_own_letters_is_still_serbian(detector: ShortTextDetector) -> None:
    from pgrecall.detection.first_stage import first_stage

    # None of ђ ћ ј љ њ џ, but no letter Serbian lacks (й ы ь я ю щ …) either: Serbian stays in.
    text = "Преузимам спискове измена са сервера"
    assert "sr" in first_stage(text).candidates
    assert detector.detect(text).iso == "sr"
    # Russian shows letters Serbian does not write: Serbian is not a candidate for it.
    assert "sr" not in first_stage("Загружаю список изменений с сервера").candidates


# Look-alike families, decided by what the stemming needs (docs/languages.md): Danish and Bokmål each
# have a stemmer of their own and must not be mixed up; Nynorsk may be stemmed as Norwegian or left
# unstemmed, never given Danish; Malay is stemmed as Indonesian; Serbian, Croatian and Bosnian in Latin
# script (lingua's Serbian is Cyrillic only) are reported as Croatian and stemmed as Serbian ('full'
# once said Lithuanian for all three), and their neighbour Slovenian, which PostgreSQL cannot stem, is
# not given the Serbian stemmer.
LOOKALIKES = [
    ("Vi må huske å bestille billettene før prisene går opp igjen neste uke.", {"nb"}),
    ("Vi skal huske at bestille billetterne, før priserne stiger igen i næste uge.", {"da"}),
    ("Vi må hugse å bestille billettane før prisane går opp att neste veke.", {None, "nb"}),
    (
        "Kerajaan negeri akan membina lebih banyak rumah mampu milik untuk golongan berpendapatan rendah.",
        {"id"},
    ),
    ("Pemerintah daerah akan membangun lebih banyak rumah murah bagi warga berpenghasilan rendah.", {"id"}),
    (
        "Vlada je danas usvojila novi zakon o zaštiti životne sredine i najavila nove investicije.",
        {"hr"},
    ),
    (
        "Vlada je danas usvojila novi zakon o zaštiti okoliša i najavila nova ulaganja u tvornice.",
        {"hr"},
    ),
    (
        "Vijeće ministara je danas usvojilo novi zakon o zaštiti okoliša i najavilo nova ulaganja.",
        {"hr"},
    ),
    ("Vlada je danes sprejela nov zakon o varstvu okolja in napovedala nove naložbe v tovarne.", {None}),
]


@pytest.mark.parametrize(("text", "allowed"), LOOKALIKES)
def test_lookalike_families_get_the_stemmer_they_need(
    detector: ShortTextDetector, text: str, allowed: set[str | None]
) -> None:
    assert detector.detect(text).iso in allowed


# Short Debian synopses (DDTP report half, benchmarks/ddtp_devset.py) that the detector used to leave
# unstemmed or give a look-alike's stemmer: one function word now brings their language in, and the
# stop-word prior lets it win.
SYNOPSES = [
    ("C++-Wrapperbibliothek für GPGME", "de"),
    ("Stilvorlagen für Erlang/OTP", "de"),
    ("Perl module offering a Command-Line User Interface", "en"),
    ("XML pull parser library for java", "en"),
    ("capacidades de POSIX 1003.1e (biblioteca)", "es"),
]


@pytest.mark.parametrize(("text", "lang"), SYNOPSES)
def test_short_synopses_get_their_language(detector: ShortTextDetector, text: str, lang: str) -> None:
    assert detector.detect(text).iso == lang


# Plain sentences of the languages users write most, with the e2e search test's entries among them: a
# tuning that trades them for figures on package synopses fails here, not only end to end (a wider
# runner-up margin once left "Las bibliotecas públicas abren los domingos durante el verano." unstemmed:
# high accuracy puts Portuguese at 0.42 against Spanish 0.55).
PLAIN_SENTENCES = [
    ("Die Häuser am See werden im Winter kaum bewohnt; viele Seen frieren zu.", "de"),
    ("Die Stadtbibliothek bleibt im August wegen Renovierung geschlossen.", "de"),
    ("Unsere Nachbarn haben im Garten einen alten Apfelbaum gepflanzt.", "de"),
    ("Der Zug nach Hamburg fährt heute eine halbe Stunde später ab.", "de"),
    ("Im Museum zeigt man alte Karten der Region und ihrer Flüsse.", "de"),
    ("Kinder lernen schneller, wenn sie draußen spielen dürfen.", "de"),
    ("Les chevaux galopaient dans les prairies au lever du soleil.", "fr"),
    ("La boulangerie du quartier ferme le lundi pendant tout l'hiver.", "fr"),
    ("Les enfants ont construit une cabane au fond du jardin.", "fr"),
    ("Le musée municipal expose des cartes anciennes de la région.", "fr"),
    ("Nous prendrons le train de nuit pour rejoindre la côte.", "fr"),
    ("Les pêcheurs rentrent au port avant la tombée de la nuit.", "fr"),
    ("Las bibliotecas públicas abren los domingos durante el verano.", "es"),
    ("Los museos municipales cierran los lunes durante todo el invierno.", "es"),
    ("Las piscinas públicas abren los sábados durante el mes de julio.", "es"),
    ("Los mercados del barrio venden fruta fresca todas las mañanas.", "es"),
    ("Los autobuses nocturnos salen de la plaza mayor cada hora.", "es"),
    ("Las escuelas rurales reciben libros nuevos cada primavera.", "es"),
    ("Retirement accounts let employees save part of their salary before tax.", "en"),
    ("The public libraries open on Sundays during the summer.", "en"),
    ("Our neighbours planted an old apple tree in their garden.", "en"),
    ("The night train to the coast leaves half an hour late today.", "en"),
    ("Fishermen return to the harbour before nightfall.", "en"),
    ("Children learn faster when they are allowed to play outside.", "en"),
    ("Le biblioteche pubbliche aprono la domenica durante l'estate.", "it"),
    ("I musei comunali chiudono il lunedì per tutto l'inverno.", "it"),
    ("I bambini hanno costruito una capanna in fondo al giardino.", "it"),
    ("Il treno per Milano parte oggi con mezz'ora di ritardo.", "it"),
    ("I pescatori tornano in porto prima del tramonto.", "it"),
    ("Il mercato del quartiere vende frutta fresca ogni mattina.", "it"),
    ("As bibliotecas públicas abrem aos domingos durante o verão.", "pt"),
    ("Os museus municipais fecham às segundas durante todo o inverno.", "pt"),
    ("As crianças construíram uma cabana no fundo do quintal.", "pt"),
    ("O comboio para Lisboa parte hoje com meia hora de atraso.", "pt"),
    ("Os pescadores voltam ao porto antes do anoitecer.", "pt"),
    ("O mercado do bairro vende fruta fresca todas as manhãs.", "pt"),
    ("De openbare bibliotheken gaan in de zomer op zondag open.", "nl"),
    ("De gemeentelijke musea zijn de hele winter op maandag gesloten.", "nl"),
    ("De kinderen hebben achter in de tuin een hut gebouwd.", "nl"),
    ("De trein naar Amsterdam vertrekt vandaag een half uur later.", "nl"),
    ("De vissers keren voor het donker terug naar de haven.", "nl"),
    ("De markt in onze wijk verkoopt elke ochtend vers fruit.", "nl"),
]


@pytest.mark.parametrize(("text", "lang"), PLAIN_SENTENCES)
def test_plain_sentences_get_their_language(detector: ShortTextDetector, text: str, lang: str) -> None:
    assert detector.detect(text).iso == lang


# A fresh interpreter: lingua's models are process-wide, so the sizes learned and the process's size
# are this scenario's alone. The limits are set from the process's own size and the sizes it learned,
# so that the decisions, not the machine, are what the test checks.
ROOM_PROBE = """
import json
from pgrecall.detection.models import LOAD_MARGIN_MB, LinguaModels

german, dutch = "Das ist ein kurzer Satz auf Deutsch.", "Dit is een korte zin in het Nederlands."
french = "Ceci est une courte phrase en français."
models = LinguaModels(["en", "de"], budget=1, linger=30.0, clock=lambda: 0.0)
for _ in range(3):
    models.high_accuracy(german, ["de", "en"])
models.high_accuracy(dutch, ["nl", "de"])
out = {"before": models.resident()}
# Room for French and Italian (not loaded yet) once Dutch, the least used rival, is gone, not before.
sizes = models.sizes()
models.resident_mb = models.load_peak_mb(["fr", "it"]) + LOAD_MARGIN_MB - sizes["nl"] / 2
models.high_accuracy(french, ["fr", "it"])
out["room"] = {"resident": models.resident(), "unloads": models.unloads, "trimmed": models.trimmed}
# No room even with every rival gone: the store's own language stays and the text's least likely
# candidate is left out; two remain.
models.resident_mb = models.load_peak_mb([])
found = models.high_accuracy("Esta es una frase corta en español.", ["es", "pt", "ca"])
out["none"] = {"resident": models.resident(), "trimmed": models.trimmed, "scored": [c for c, _ in found]}
# A long text is scored by trigrams alone: no model loads, nothing counts as resident.
loads = models.loads
models.high_accuracy(german * 5, ["de", "nl", "da"])  # 145 letters
out["long"] = {"loads": models.loads - loads, "resident": models.resident(), "trigrams": models.trigram_texts}
print(json.dumps(out))
"""


def test_a_load_makes_room_by_memory_under_the_resident_limit() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", ROOM_PROBE], capture_output=True, text=True, check=True, env=env
    ).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["before"] == ["de", "en", "nl"]
    # Dutch went (used once), English stayed (three uses), German is the store's main language.
    assert seen["room"] == {"resident": ["de", "en", "fr", "it"], "unloads": 1, "trimmed": 0}
    assert seen["none"]["resident"] == ["de", "es", "pt"]
    assert seen["none"]["trimmed"] == 1
    assert sorted(seen["none"]["scored"]) == ["es", "pt"]
    assert seen["long"] == {"loads": 0, "resident": ["de", "es", "pt"], "trigrams": 1}
