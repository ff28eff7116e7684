"""Russian office memos for the language tests: each question's answer is written in other word forms than
the question's, while other memos repeat the question's very words about other matters."""

from __future__ import annotations

from pathlib import Path

from tests.notes import write_notes

MEMOS = {
    "otpusk.txt": (
        "О порядке предоставления отпусков\n\n"
        "Работникам компании ежегодно предоставляется оплачиваемый отпуск продолжительностью 28 календарных "
        "дней. По заявлению работника его можно разделить на части, одна из которых составляет не менее "
        "14 дней. График отпусков на следующий год утверждает отдел кадров до 15 декабря."
    ),
    "komandirovki.txt": (
        "Служебные поездки\n\n"
        "Направление работника в командировку утверждается приказом генерального директора по служебной "
        "записке руководителя отдела. Авансовый отчёт о командировке сдаётся в бухгалтерию в течение трёх "
        "рабочих дней после возвращения."
    ),
    "sutochnye.txt": (
        "Возмещение расходов в поездках\n\n"
        "При поездке за рубеж суточные выплачиваются в размере 50 евро за каждый день пребывания за "
        "границей. В поездке по России суточные составляют 700 рублей в день."
    ),
    "propusk.txt": (
        "Пропускной режим\n\n"
        "О потерях пропусков работник сообщает в службу охраны в тот же день. Новый пропуск изготавливается "
        "за три рабочих дня, его стоимость 500 рублей удерживается из заработной платы."
    ),
    # Distractors: the questions' exact word forms, about other matters.
    "osmotr.txt": (
        "Технический осмотр оборудования\n\n"
        "Какова продолжительность ежегодного осмотра серверов? Продолжительность ежегодного осмотра серверной "
        "составляет два рабочих дня; продолжительность ежегодного осмотра кондиционеров — один день."
    ),
    "sklad.txt": (
        "Склад\n\n"
        "Отпуска товаров со склада производятся по накладным. Отпуска материалов в выходные дни не "
        "производятся; отпуска оформляет кладовщик."
    ),
    "dokumenty.txt": (
        "Делопроизводство\n\n"
        "Кто утверждает шаблоны документов? Шаблоны писем и служебных записок утверждает юридический отдел; "
        "он же утверждает номенклатуру дел сотрудников."
    ),
    "transport.txt": (
        "Корпоративный транспорт\n\n"
        "Какой размер парковки у офиса? Размер парковки — 40 мест; при поездках на корпоративном автомобиле "
        "размер возмещения бензина зависит от пробега. Поездках на такси не возмещаются."
    ),
    "pochta.txt": (
        "Почта\n\n"
        "Что делать при потере посылки? При потере посылки курьерская служба возмещает её стоимость; при "
        "потере письма сотрудник канцелярии делает запрос в почтовое отделение."
    ),
}

# (question, the memo that answers it, a figure or name the answer states)
QUESTIONS = [
    ("Какова продолжительность ежегодного отпуска?", "otpusk.txt", "28"),
    ("Кто утверждает командировки сотрудников?", "komandirovki.txt", "директор"),
    ("Какой размер суточных при поездках за границу?", "sutochnye.txt", "50"),
    ("Что делать при потере пропуска?", "propusk.txt", "охран"),
]
# The same questions in English. With the default model's translations, only the allowance memo ranks first
# ("annual paid leave" came back as "годовой пакет письма"); the test asks that one.
ENGLISH_QUESTIONS = [
    ("How long is the annual paid leave?", "otpusk.txt", "28"),
    ("Who approves business trips of employees?", "komandirovki.txt", "директор"),
    ("What is the daily allowance for trips abroad?", "sutochnye.txt", "50"),
    ("What should I do if I lose my access badge?", "propusk.txt", "охран"),
]
ENGLISH_QUESTION = ENGLISH_QUESTIONS[2]


def write_memos(folder: Path) -> Path:
    """The memos as files in `folder`; returns it."""
    return write_notes(folder, MEMOS)
