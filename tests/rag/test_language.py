"""Language detection on passages and short questions, and the Snowball stems the keyword index uses."""

from __future__ import annotations

import pytest

from rag.language import LANGUAGES, detect, name, question_stems, stemmed_text

# Short office questions as people type them, several per language.
QUESTIONS = {
    "en": ["What is the daily meal allowance for travel abroad?", "How many vacation days do I get?",
           "Who approves expenses?", "laptop stolen", "Can I work from home on Fridays?", "VPN setup",
           "printer on the second floor", "How do I reset my password?", "Where are backups stored?"],
    "ru": ["Сколько дней отпуска положено?", "Кто утверждает командировки?", "Как сбросить пароль?",
           "суточные за границей", "Что делать, если украли ноутбук?", "отпуск"],
    "de": ["Wie viele Urlaubstage habe ich?", "Wer genehmigt Dienstreisen?",
           "Was mache ich, wenn mein Laptop gestohlen wird?", "Wie hoch ist das Tagegeld im Ausland?",
           "Wo werden die Sicherungen gespeichert?", "Darf ich freitags von zu Hause arbeiten?"],
    "fr": ["Combien de jours de congé ai-je ?", "Qui approuve les frais de déplacement ?",
           "Que faire si mon ordinateur est volé ?", "Quel est le montant de l'indemnité journalière ?",
           "Où sont stockées les sauvegardes ?", "Puis-je travailler depuis chez moi le vendredi ?"],
    "es": ["¿Cuántos días de vacaciones tengo?", "¿Quién aprueba los viajes de trabajo?",
           "¿Qué hago si me roban el portátil?", "¿Cuál es la dieta diaria en el extranjero?",
           "¿Dónde se guardan las copias de seguridad?", "¿Puedo trabajar desde casa los viernes?"],
    "it": ["Quanti giorni di ferie ho?", "Chi approva le trasferte?", "Cosa devo fare se mi rubano il portatile?",
           "Qual è la diaria per i viaggi all'estero?", "Dove sono salvati i backup?",
           "Posso lavorare da casa il venerdì?"],
    "pt": ["Quantos dias de férias eu tenho?", "Quem aprova as viagens de trabalho?",
           "O que faço se roubarem o meu portátil?", "Qual é a ajuda de custo diária no estrangeiro?",
           "Onde são guardadas as cópias de segurança?", "Posso trabalhar em casa às sextas-feiras?"],
    "nl": ["Hoeveel vakantiedagen heb ik?", "Wie keurt dienstreizen goed?",
           "Wat moet ik doen als mijn laptop gestolen is?", "Hoe hoog is de dagvergoeding in het buitenland?",
           "Waar worden de back-ups bewaard?", "Mag ik op vrijdag thuiswerken?"],
    "pl": ["Ile dni urlopu mi przysługuje?", "Kto zatwierdza delegacje?", "Co zrobić, gdy ukradną mi laptopa?",
           "Jaka jest dieta za granicą?", "Gdzie są przechowywane kopie zapasowe?",
           "Czy mogę pracować z domu w piątki?"],
}


def test_short_questions_are_told_apart_and_a_miss_stays_english():
    results = [(lang, q, detect(q)) for lang, qs in QUESTIONS.items() for q in qs]
    wrong = [(lang, q, got) for lang, q, got in results if got != lang]
    # Measured: 3 of 57 missed ("Combien de jours de congé ai-je ?", two Dutch ones), each taken for English,
    # which is how every question was searched before languages were told apart.
    assert len(wrong) <= 4, wrong
    assert all(got == "en" for _, _, got in wrong), wrong
    assert not [w for w in wrong if w[0] in ("en", "ru")], wrong


def test_english_questions_of_words_other_lists_share_stay_english():
    # Words English shares with other lists ("my", "to", "go", "do", "we", "on": Polish and French list them too)
    # count evenly for each: they once leant to the other language, and these were read as Polish and French,
    # which left their answers unchecked (README "Eight offices more, and Debian questions more, held out").
    for question in ("Who approves my request to go to a conference?", "Do we do MOT tests on Saturday mornings?",
                     "How much do we charge for a standard MOT on a car?"):
        assert detect(question) == "en", question


PASSAGES = {
    "en": "The employee must submit the expense report within five working days after returning from the trip. "
          "Receipts are attached to the report, and the manager approves it before the accounting department pays.",
    "ru": "Работник сдаёт авансовый отчёт в бухгалтерию в течение трёх рабочих дней после возвращения из "
          "командировки. К отчёту прикладываются чеки; руководитель отдела подписывает его до оплаты.",
    "de": "Der Mitarbeiter reicht die Reisekostenabrechnung innerhalb von fünf Arbeitstagen nach der Rückkehr ein. "
          "Die Belege werden beigefügt, und der Vorgesetzte genehmigt sie vor der Auszahlung.",
    "fr": "Le salarié remet sa note de frais dans les cinq jours ouvrés suivant son retour. Les justificatifs "
          "sont joints et le responsable la valide avant le paiement par la comptabilité.",
    "es": "El empleado entrega el informe de gastos en los cinco días hábiles siguientes a su regreso. Los "
          "recibos se adjuntan y el responsable lo aprueba antes de que contabilidad pague.",
    "pl": "Pracownik składa rozliczenie kosztów podróży w ciągu pięciu dni roboczych od powrotu. Rachunki "
          "dołącza się do rozliczenia, a kierownik zatwierdza je przed wypłatą.",
}


@pytest.mark.parametrize("lang", sorted(PASSAGES))
def test_passages_languages(lang):
    assert detect(PASSAGES[lang]) == lang


def test_a_russian_memo_quoting_english_names_is_russian_and_nothing_is_english():
    assert detect("Для подключения к VPN откройте Cisco AnyConnect и введите логин от Windows.") == "ru"
    assert detect("") == "en" and detect("1234 5678") == "en" and detect("zebra quokka") == "en"


def test_every_language_has_a_snowball_stemmer_and_a_name():
    for code in LANGUAGES:
        assert stemmed_text("test", code) and name(code)
    assert name("ru") == "Russian"


def test_russian_word_forms_share_a_stem_and_stop_words_leave_the_question():
    forms = stemmed_text("командировка командировке командировках командировку Командировки", "ru").split()
    assert len(set(forms)) == 1
    assert question_stems("Кто утверждает командировки сотрудников?", "ru") == \
        question_stems("утверждают командировках сотрудника", "ru")
    assert question_stems("Какова продолжительность отпуска?", "ru") == \
        stemmed_text("продолжительностью отпусков", "ru").split()
    # Latin words inside Russian text are stemmed as English, in the passage and in the question alike.
    assert stemmed_text("серверы servers", "ru") == " ".join(question_stems("серверы servers", "ru"))


def test_german_word_forms_share_a_stem():
    assert len(set(stemmed_text("Dienstreise Dienstreisen", "de").split())) == 1
    assert question_stems("Wer genehmigt die Dienstreisen?", "de") == \
        stemmed_text("genehmigt Dienstreise", "de").split()
