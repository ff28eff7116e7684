<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ru_RU">
<context>
    <name>Banner</name>
    <message>
        <location filename="../widgets.py" line="45"/>
        <source>Dismiss</source>
        <translation>Закрыть</translation>
    </message>
    <message>
        <location filename="../widgets.py" line="68"/>
        <source>Open the log file</source>
        <translation>Открыть журнал</translation>
    </message>
</context>
<context>
    <name>Chat</name>
    <message>
        <location filename="../chat.py" line="56"/>
        <source>page {n}</source>
        <translation>стр. {n}</translation>
    </message>
    <message>
        <location filename="../chat.py" line="60"/>
        <source>scanned, low confidence</source>
        <translation>скан, низкая достоверность</translation>
    </message>
    <message>
        <location filename="../chat.py" line="65"/>
        <source>OCR read this page poorly: check the passage against the original.</source>
        <translation>OCR плохо распознал эту страницу: сверьте отрывок с оригиналом.</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <location filename="../chat.py" line="455"/>
        <source>Ask about your documents…  (Enter sends, Shift+Enter: new line)</source>
        <translation>Спросите о своих документах…  (Enter — отправить, Shift+Enter — новая строка)</translation>
    </message>
    <message>
        <location filename="../chat.py" line="458"/>
        <location filename="../chat.py" line="538"/>
        <source>Send</source>
        <translation>Отправить</translation>
    </message>
    <message>
        <location filename="../chat.py" line="489"/>
        <source>Answers come only from the documents in this workspace, with their sources. Drop files or folders anywhere on the window to add them.</source>
        <translation>Ответы берутся только из документов этого пространства, с указанием источников. Чтобы добавить файлы или папки, перетащите их в любое место окна.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="498"/>
        <source>Ask anything about the {n} documents in “{ws}”</source>
        <translation>Спросите что угодно о документах в «{ws}» ({n})</translation>
    </message>
    <message>
        <location filename="../chat.py" line="501"/>
        <source>“{ws}” has no documents yet</source>
        <translation>В «{ws}» пока нет документов</translation>
    </message>
    <message>
        <location filename="../chat.py" line="538"/>
        <source>Stop</source>
        <translation>Остановить</translation>
    </message>
    <message>
        <location filename="../chat.py" line="539"/>
        <source>Stop the answer (Esc)</source>
        <translation>Остановить ответ (Esc)</translation>
    </message>
    <message>
        <location filename="../chat.py" line="539"/>
        <source>Send (Enter)</source>
        <translation>Отправить (Enter)</translation>
    </message>
</context>
<context>
    <name>CompareView</name>
    <message>
        <location filename="../compare_view.py" line="40"/>
        <source>What changed: {old} → {new}</source>
        <translation>Что изменилось: {old} → {new}</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="81"/>
        <source>Previous change</source>
        <translation>Предыдущее изменение</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="84"/>
        <source>Next change</source>
        <translation>Следующее изменение</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="87"/>
        <source>Close</source>
        <translation>Закрыть</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="112"/>
        <source>No changes in the text (formatting and spacing aside).</source>
        <translation>Текст не изменился (без учёта оформления и пробелов).</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="116"/>
        <source>Change {n} of {count}</source>
        <translation>Изменение {n} из {count}</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="140"/>
        <source>renamed</source>
        <translation>переименовано</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="141"/>
        <source>added</source>
        <translation>добавлено</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="141"/>
        <source>removed</source>
        <translation>удалено</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="141"/>
        <source>changed</source>
        <translation>изменено</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="142"/>
        <source>moved</source>
        <translation>перемещено</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="147"/>
        <source>version {n}</source>
        <translation>версия {n}</translation>
    </message>
    <message>
        <location filename="../compare_view.py" line="149"/>
        <source>indexed {when}</source>
        <translation>проиндексировано {when}</translation>
    </message>
</context>
<context>
    <name>ConversationController</name>
    <message>
        <location filename="../controllers/conversations.py" line="90"/>
        <source>Export chat</source>
        <translation>Экспорт чата</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="91"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="97"/>
        <source>Saved {path}</source>
        <translation>Сохранено: {path}</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="115"/>
        <source>Reading your documents…</source>
        <translation>Читаю ваши документы…</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="123"/>
        <source>Summarize {name}</source>
        <translation>Краткое содержание: {name}</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="125"/>
        <source>Summarizing {name}…</source>
        <translation>Составляю краткое содержание {name}…</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="140"/>
        <source>An answer is being written: wait for it, or stop it (Esc).</source>
        <translation>Ответ ещё пишется: дождитесь его или остановите (Esc).</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="148"/>
        <source>Waiting for the model to load…</source>
        <translation>Ждём загрузки модели…</translation>
    </message>
    <message>
        <location filename="../controllers/conversations.py" line="199"/>
        <source>Stopped.</source>
        <translation>Остановлено.</translation>
    </message>
</context>
<context>
    <name>DocumentController</name>
    <message>
        <location filename="../controllers/documents.py" line="60"/>
        <source>Compare with…</source>
        <translation>Сравнить с…</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="61"/>
        <source>Compare {name} with (the older one):</source>
        <translation>Сравнить {name} с (более ранним):</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="83"/>
        <source>Russian</source>
        <translation>русский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="83"/>
        <source>German</source>
        <translation>немецкий</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="83"/>
        <source>French</source>
        <translation>французский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="84"/>
        <source>Spanish</source>
        <translation>испанский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="84"/>
        <source>Italian</source>
        <translation>итальянский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="84"/>
        <source>Portuguese</source>
        <translation>португальский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="85"/>
        <source>Dutch</source>
        <translation>нидерландский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="85"/>
        <source>Polish</source>
        <translation>польский</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="87"/>
        <source>{n} of the {total} passages here are in {language}, which the embedding model {model} does not read: questions in {language} are matched by their words only, not by their meaning.</source>
        <translation>{n} из {total} фрагментов здесь написаны на языке, которого модель эмбеддингов {model} не понимает ({language}): вопросы на нём сопоставляются только по словам, а не по смыслу.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="92"/>
        <source>A multilingual model (multilingual-e5 or bge-m3, as a sentence-transformers folder) would read them: Hearth converts it and embeds this workspace&apos;s documents again with it.</source>
        <translation>Их поймёт многоязычная модель (multilingual-e5 или bge-m3, папка sentence-transformers): Hearth преобразует её и заново построит эмбеддинги документов этого пространства.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="94"/>
        <source>Use a multilingual model…</source>
        <translation>Выбрать многоязычную модель…</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="99"/>
        <source>Choose a multilingual embedding model folder</source>
        <translation>Выберите папку многоязычной модели эмбеддингов</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="103"/>
        <source>Use another embedding model</source>
        <translation>Другая модель эмбеддингов</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="104"/>
        <source>Convert the model in {folder} and embed the {n} documents of this workspace again with it? That takes a while; questions are answered from the documents already done. If you stop it, add the remaining documents again later.</source>
        <translation>Преобразовать модель из {folder} и заново построить с ней эмбеддинги {n} документов этого пространства? Это займёт время; на вопросы отвечают уже обработанные документы. Если остановить процесс, оставшиеся документы нужно будет добавить снова.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="112"/>
        <source>This workspace is now searched with the model in {folder}.</source>
        <translation>Теперь поиск в этом пространстве идёт с моделью из {folder}.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="121"/>
        <source>Add documents</source>
        <translation>Добавить документы</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="127"/>
        <source>Add a folder</source>
        <translation>Добавить папку</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="170"/>
        <source>Indexed {n} documents ({chunks} passages) in {s:.1f} s; {u} unchanged, {f} failed.</source>
        <translation>Проиндексировано документов: {n} (фрагментов: {chunks}) за {s:.1f} с; без изменений: {u}, с ошибкой: {f}.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="187"/>
        <source>Stopping after the current document…</source>
        <translation>Остановка после текущего документа…</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="192"/>
        <source>Remove documents</source>
        <translation>Убрать документы</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="193"/>
        <source>Remove {names} from the library? The files themselves are not deleted.</source>
        <translation>Убрать {names} из библиотеки? Сами файлы не удаляются.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="207"/>
        <source>Adding the model {name}…</source>
        <translation>Добавление модели {name}…</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="210"/>
        <source>Adding the model {name}… {pct:.0f}%</source>
        <translation>Добавление модели {name}… {pct:.0f}%</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="214"/>
        <source>{name} is now in the model library.</source>
        <translation>Модель {name} добавлена в библиотеку моделей.</translation>
    </message>
    <message>
        <location filename="../controllers/documents.py" line="215"/>
        <source>Choose it as the chat model in Settings (Ctrl+,).</source>
        <translation>Выберите её как модель для чата в настройках (Ctrl+,).</translation>
    </message>
</context>
<context>
    <name>HardwarePanel</name>
    <message>
        <location filename="../hardware_panel.py" line="68"/>
        <source>Looking at this machine…</source>
        <translation>Изучаем этот компьютер…</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="98"/>
        <source>No GPU found in the system files: the chat model runs on the Vulkan device below.</source>
        <translation>В системных файлах GPU не найден: чат-модель работает на устройстве Vulkan ниже.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="101"/>
        <source>No GPU found: the models run on the CPU.</source>
        <translation>Видеокарта не найдена: модели работают на процессоре.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="127"/>
        <source>Hardware</source>
        <translation>Оборудование</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="130"/>
        <source>updated {time}</source>
        <translation>обновлено в {time}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="133"/>
        <source>Refresh</source>
        <translation>Обновить</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="143"/>
        <source>integrated GPU</source>
        <translation>встроенная видеокарта</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="143"/>
        <source>discrete GPU</source>
        <translation>дискретная видеокарта</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="145"/>
        <location filename="../hardware_panel.py" line="196"/>
        <source>driver {name}</source>
        <translation>драйвер {name}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="145"/>
        <location filename="../hardware_panel.py" line="196"/>
        <source>none</source>
        <translation>нет</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="147"/>
        <source>ROCm: yes</source>
        <translation>ROCm: да</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="147"/>
        <source>ROCm: no</source>
        <translation>ROCm: нет</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="149"/>
        <source>ROCm device {n}</source>
        <translation>устройство ROCm {n}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="154"/>
        <source>Used</source>
        <translation>Используется</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="154"/>
        <source>Hidden from ROCm</source>
        <translation>Скрыта от ROCm</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="155"/>
        <source>Not usable by ROCm</source>
        <translation>Не поддерживается ROCm</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="155"/>
        <source>Not used</source>
        <translation>Не используется</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="165"/>
        <source>VRAM</source>
        <translation>VRAM</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="165"/>
        <source>GTT</source>
        <translation>GTT</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="173"/>
        <source>Models are loaded into this memory</source>
        <translation>Модели загружаются в эту память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="195"/>
        <source>NPU</source>
        <translation>NPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="205"/>
        <source>CPU</source>
        <translation>Процессор</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="206"/>
        <source>{cores} cores, {threads} threads</source>
        <translation>ядер: {cores}, потоков: {threads}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="215"/>
        <location filename="../hardware_panel.py" line="238"/>
        <source>RAM</source>
        <translation>ОЗУ</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="228"/>
        <source>Memory plan</source>
        <translation>План памяти</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="229"/>
        <source>No chat model chosen yet.</source>
        <translation>Модель для чата ещё не выбрана.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="231"/>
        <source>Memory plan: {model}</source>
        <translation>План памяти: {model}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="232"/>
        <source>{ctx} tokens of context</source>
        <translation>контекст {ctx} токенов</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="235"/>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="243"/>
        <source>weights</source>
        <translation>веса</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="243"/>
        <source>KV cache</source>
        <translation>KV-кэш</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="243"/>
        <source>compute</source>
        <translation>вычисления</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="244"/>
        <source>embedder</source>
        <translation>эмбеддер</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="251"/>
        <source>Layers on the GPU: {planned} of {total} planned</source>
        <translation>Слоёв на GPU: по плану {planned} из {total}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="253"/>
        <source>{n} in use</source>
        <translation>фактически {n}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="254"/>
        <source>model not loaded yet</source>
        <translation>модель ещё не загружена</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="256"/>
        <source>(a partial offload: the other layers run on the CPU)</source>
        <translation>(частичная выгрузка: остальные слои работают на процессоре)</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="259"/>
        <source>Fits in memory</source>
        <translation>Помещается в память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="259"/>
        <source>Does not fit in memory</source>
        <translation>Не помещается в память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="271"/>
        <source>Answer checker: {model}</source>
        <translation>Проверка ответов: {model}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="273"/>
        <source>{n} of {total} layers on the GPU ({gpu})</source>
        <translation>{n} из {total} слоёв на GPU ({gpu})</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="275"/>
        <source>on the CPU</source>
        <translation>на CPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="276"/>
        <source>loaded, {n} layers on the GPU</source>
        <translation>загружена, {n} слоёв на GPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="277"/>
        <source>loaded with the first answer it checks</source>
        <translation>загружается с первым проверяемым ответом</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="278"/>
        <source>{ctx} tokens of context, {ram} of RAM, {where}; {loaded}</source>
        <translation>{ctx} токенов контекста, {ram} ОЗУ, {where}; {loaded}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="283"/>
        <source>Fits beside the chat model</source>
        <translation>Помещается рядом с моделью чата</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="283"/>
        <source>Does not fit beside the chat model</source>
        <translation>Не помещается рядом с моделью чата</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="300"/>
        <source>{need} of {free} free</source>
        <translation>{need} из {free} свободных</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="307"/>
        <source>Runtimes</source>
        <translation>Среды выполнения</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="313"/>
        <location filename="../hardware_panel.py" line="321"/>
        <source>not installed</source>
        <translation>не установлено</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="315"/>
        <source>CPU only</source>
        <translation>только процессор</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="324"/>
        <source>no working provider</source>
        <translation>нет рабочего провайдера</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="334"/>
        <source>llama.cpp engine: {engine}</source>
        <translation>Движок llama.cpp: {engine}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="338"/>
        <source>Installed: {engines}</source>
        <translation>Установлены: {engines}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="342"/>
        <source>No Vulkan device.</source>
        <translation>Устройств Vulkan нет.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="345"/>
        <source>software, runs on the CPU</source>
        <translation>программное, работает на процессоре</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="346"/>
        <source>heap {heap}</source>
        <translation>память {heap}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="348"/>
        <source>budget {budget}</source>
        <translation>доступно {budget}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="374"/>
        <source>Checks</source>
        <translation>Проверки</translation>
    </message>
</context>
<context>
    <name>LibraryPanel</name>
    <message>
        <location filename="../library.py" line="66"/>
        <source>Add files…</source>
        <translation>Добавить файлы…</translation>
    </message>
    <message>
        <location filename="../library.py" line="67"/>
        <source>Add documents to this workspace (Ctrl+O)</source>
        <translation>Добавить документы в это пространство (Ctrl+O)</translation>
    </message>
    <message>
        <location filename="../library.py" line="70"/>
        <source>Add folder…</source>
        <translation>Добавить папку…</translation>
    </message>
    <message>
        <location filename="../library.py" line="74"/>
        <location filename="../library.py" line="165"/>
        <source>Ask about these</source>
        <translation>Спросить об этих</translation>
    </message>
    <message>
        <location filename="../library.py" line="75"/>
        <source>Answer the next questions from the selected documents only</source>
        <translation>Отвечать на следующие вопросы только по выбранным документам</translation>
    </message>
    <message>
        <location filename="../library.py" line="81"/>
        <source>More actions for the selected documents</source>
        <translation>Другие действия с выбранными документами</translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Cancel</source>
        <translation>Отмена</translation>
    </message>
    <message>
        <location filename="../library.py" line="100"/>
        <source>Stop indexing; the documents done so far are kept</source>
        <translation>Остановить индексацию; уже обработанные документы сохранятся</translation>
    </message>
    <message>
        <location filename="../library.py" line="111"/>
        <source>Document</source>
        <translation>Документ</translation>
    </message>
    <message>
        <location filename="../library.py" line="111"/>
        <source>Status</source>
        <translation>Состояние</translation>
    </message>
    <message>
        <location filename="../library.py" line="111"/>
        <source>Passages</source>
        <translation>Фрагменты</translation>
    </message>
    <message>
        <location filename="../library.py" line="134"/>
        <source>Watched folders</source>
        <translation>Отслеживаемые папки</translation>
    </message>
    <message>
        <location filename="../library.py" line="136"/>
        <source>Watch a folder…</source>
        <translation>Отслеживать папку…</translation>
    </message>
    <message>
        <location filename="../library.py" line="137"/>
        <source>Keep a folder in sync: new, changed and deleted files are picked up by themselves</source>
        <translation>Синхронизировать папку: новые, изменённые и удалённые файлы учитываются сами</translation>
    </message>
    <message>
        <location filename="../library.py" line="153"/>
        <source>None: documents are indexed when you add them.</source>
        <translation>Нет: документы индексируются, когда вы их добавляете.</translation>
    </message>
    <message>
        <location filename="../library.py" line="156"/>
        <source>Drop files or folders anywhere on the window to add them; drop a .gguf file to add a chat model.</source>
        <translation>Перетащите файлы или папки в любое место окна, чтобы добавить их; файл .gguf добавляет модель для чата.</translation>
    </message>
    <message>
        <location filename="../library.py" line="163"/>
        <source>Open</source>
        <translation>Открыть</translation>
    </message>
    <message>
        <location filename="../library.py" line="167"/>
        <source>Summarize</source>
        <translation>Краткое содержание</translation>
    </message>
    <message>
        <location filename="../library.py" line="168"/>
        <source>A summary of the whole document, section by section, in the chat</source>
        <translation>Краткое содержание всего документа, раздел за разделом, в чате</translation>
    </message>
    <message>
        <location filename="../library.py" line="170"/>
        <source>Compare with…</source>
        <translation>Сравнить с…</translation>
    </message>
    <message>
        <location filename="../library.py" line="171"/>
        <source>What changed between this document and another one</source>
        <translation>Что изменилось между этим документом и другим</translation>
    </message>
    <message>
        <location filename="../library.py" line="173"/>
        <source>Compare with previous version</source>
        <translation>Сравнить с предыдущей версией</translation>
    </message>
    <message>
        <location filename="../library.py" line="174"/>
        <source>What changed since the version indexed before this one</source>
        <translation>Что изменилось по сравнению с версией, проиндексированной до этой</translation>
    </message>
    <message>
        <location filename="../library.py" line="182"/>
        <source>Re-index</source>
        <translation>Переиндексировать</translation>
    </message>
    <message>
        <location filename="../library.py" line="184"/>
        <source>Remove from the library</source>
        <translation>Убрать из библиотеки</translation>
    </message>
    <message>
        <location filename="../library.py" line="226"/>
        <source>starting…</source>
        <translation>запуск…</translation>
    </message>
    <message>
        <location filename="../library.py" line="253"/>
        <source>Open folder</source>
        <translation>Открыть папку</translation>
    </message>
    <message>
        <location filename="../library.py" line="254"/>
        <source>Stop watching</source>
        <translation>Не отслеживать</translation>
    </message>
    <message>
        <location filename="../library.py" line="264"/>
        <source>queued</source>
        <translation>в очереди</translation>
    </message>
    <message>
        <location filename="../library.py" line="264"/>
        <source>reading…</source>
        <translation>чтение…</translation>
    </message>
    <message>
        <location filename="../library.py" line="264"/>
        <source>embedding…</source>
        <translation>векторизация…</translation>
    </message>
    <message>
        <location filename="../library.py" line="265"/>
        <source>done</source>
        <translation>готово</translation>
    </message>
    <message>
        <location filename="../library.py" line="265"/>
        <source>failed</source>
        <translation>ошибка</translation>
    </message>
    <message>
        <location filename="../library.py" line="265"/>
        <source>not indexed (stopped)</source>
        <translation>не проиндексирован (остановлено)</translation>
    </message>
    <message>
        <location filename="../library.py" line="266"/>
        <source>interrupted, will be redone</source>
        <translation>прервано, будет повторено</translation>
    </message>
    <message>
        <location filename="../library.py" line="279"/>
        <source>scanned, low confidence</source>
        <translation>скан, низкая достоверность</translation>
    </message>
    <message>
        <location filename="../library.py" line="281"/>
        <source>Read by OCR from page images, poorly on pages: {pages}. Check their text against the original before relying on it.</source>
        <translation>Распознано (OCR) с изображений страниц, плохо на страницах: {pages}. Сверьте их текст с оригиналом, прежде чем на него полагаться.</translation>
    </message>
    <message>
        <location filename="../library.py" line="284"/>
        <source>Read by OCR from page images, poorly: check the text against the original before relying on it.</source>
        <translation>Распознано (OCR) с изображений страниц, плохо: сверьте текст с оригиналом, прежде чем на него полагаться.</translation>
    </message>
    <message>
        <location filename="../library.py" line="288"/>
        <location filename="../library.py" line="290"/>
        <source>scanned</source>
        <translation>скан</translation>
    </message>
    <message>
        <location filename="../library.py" line="288"/>
        <source>Pages read by OCR from page images: {pages}.</source>
        <translation>Страницы, распознанные (OCR) с изображений: {pages}.</translation>
    </message>
    <message>
        <location filename="../library.py" line="290"/>
        <source>Read by OCR from page images.</source>
        <translation>Распознано (OCR) с изображений страниц.</translation>
    </message>
    <message>
        <location filename="../library.py" line="331"/>
        <source>Looking for documents…</source>
        <translation>Поиск документов…</translation>
    </message>
    <message>
        <location filename="../library.py" line="354"/>
        <source>Converting the embedding model in {folder} (a minute or so)…</source>
        <translation>Преобразование модели эмбеддингов из {folder} (около минуты)…</translation>
    </message>
    <message>
        <location filename="../library.py" line="371"/>
        <source>Indexing stopped.</source>
        <translation>Индексация остановлена.</translation>
    </message>
    <message>
        <location filename="../library.py" line="372"/>
        <source>The documents indexed so far are kept; add the rest again to go on.</source>
        <translation>Уже проиндексированные документы сохранены; чтобы продолжить, добавьте остальные ещё раз.</translation>
    </message>
    <message>
        <location filename="../library.py" line="376"/>
        <source>{n} of the documents could not be read.</source>
        <translation>Не удалось прочитать документов: {n}.</translation>
    </message>
    <message>
        <location filename="../library.py" line="377"/>
        <source>Each one&apos;s reason is in its row (hover for the full text).</source>
        <translation>Причина указана в строке каждого (наведите курсор, чтобы увидеть полный текст).</translation>
    </message>
    <message>
        <location filename="../library.py" line="384"/>
        <source>{done} of {total} files · {chunks} passages</source>
        <translation>{done} из {total} файлов · фрагментов: {chunks}</translation>
    </message>
    <message>
        <location filename="../library.py" line="387"/>
        <source>{pages} pages, {rate:.1f} pages/s</source>
        <translation>страниц: {pages}, {rate:.1f} стр./с</translation>
    </message>
    <message>
        <location filename="../library.py" line="394"/>
        <source>{rate:.0f} passages/s · about {eta} left</source>
        <translation>{rate:.0f} фрагм./с · осталось около {eta}</translation>
    </message>
    <message>
        <location filename="../library.py" line="421"/>
        <source>1 earlier version</source>
        <translation>есть предыдущая версия</translation>
    </message>
    <message>
        <location filename="../library.py" line="422"/>
        <source>{n} earlier versions</source>
        <translation>предыдущих версий: {n}</translation>
    </message>
    <message>
        <location filename="../library.py" line="424"/>
        <source>Earlier versions are kept: right-click › Compare with previous version shows what changed.</source>
        <translation>Предыдущие версии сохранены: правый щелчок › «Сравнить с предыдущей версией» покажет, что изменилось.</translation>
    </message>
    <message>
        <location filename="../library.py" line="429"/>
        <source>{n} pages</source>
        <translation>страниц: {n}</translation>
    </message>
    <message>
        <location filename="../library.py" line="444"/>
        <source>No documents yet.</source>
        <translation>Документов пока нет.</translation>
    </message>
    <message>
        <location filename="../library.py" line="446"/>
        <source>{n} documents · {chunks} passages</source>
        <translation>документов: {n} · фрагментов: {chunks}</translation>
    </message>
    <message>
        <location filename="../library.py" line="448"/>
        <source>{n} failed</source>
        <translation>с ошибкой: {n}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../main_window.py" line="94"/>
        <location filename="../main_window.py" line="207"/>
        <source>Library</source>
        <translation>Библиотека</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="95"/>
        <location filename="../main_window.py" line="208"/>
        <source>Hardware</source>
        <translation>Оборудование</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="186"/>
        <source>&amp;File</source>
        <translation>&amp;Файл</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="187"/>
        <source>Add files…</source>
        <translation>Добавить файлы…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="189"/>
        <source>Add folder…</source>
        <translation>Добавить папку…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="190"/>
        <source>Watch a folder…</source>
        <translation>Отслеживать папку…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="192"/>
        <source>New workspace…</source>
        <translation>Новое пространство…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="194"/>
        <source>Settings…</source>
        <translation>Настройки…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="196"/>
        <source>Quit</source>
        <translation>Выход</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="197"/>
        <source>&amp;Chat</source>
        <translation>&amp;Чат</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="198"/>
        <source>New chat</source>
        <translation>Новый чат</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="200"/>
        <source>Stop</source>
        <translation>Остановить</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="202"/>
        <source>Export chat…</source>
        <translation>Экспорт чата…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="203"/>
        <source>&amp;View</source>
        <translation>&amp;Вид</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="204"/>
        <source>Side panel</source>
        <translation>Боковая панель</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="209"/>
        <source>&amp;Help</source>
        <translation>&amp;Справка</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="210"/>
        <source>User guide</source>
        <translation>Руководство пользователя</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="212"/>
        <source>Open log file</source>
        <translation>Открыть журнал</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="213"/>
        <source>Open data folder</source>
        <translation>Открыть папку данных</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="214"/>
        <location filename="../main_window.py" line="344"/>
        <source>About Hearth</source>
        <translation>О программе Hearth</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="332"/>
        <source>The user guide is not installed with this copy of Hearth.</source>
        <translation>Руководство пользователя не установлено вместе с этой копией Hearth.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="333"/>
        <source>It is the docs/ folder of Hearth&apos;s source, starting at docs/README.md.</source>
        <translation>Оно находится в папке docs/ исходного кода Hearth, начиная с docs/README.md.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="345"/>
        <source>&lt;b&gt;Hearth&lt;/b&gt;&lt;br&gt;Private, offline answers from your own documents.&lt;br&gt;Nothing leaves this computer.</source>
        <translation>&lt;b&gt;Hearth&lt;/b&gt;&lt;br&gt;Частные ответы по вашим документам без интернета.&lt;br&gt;Ничто не покидает этот компьютер.</translation>
    </message>
</context>
<context>
    <name>ModelController</name>
    <message>
        <location filename="../controllers/model.py" line="45"/>
        <source>Model: {name}</source>
        <translation>Модель: {name}</translation>
    </message>
    <message>
        <location filename="../controllers/model.py" line="46"/>
        <source>Loading {name}…</source>
        <translation>Загрузка: {name}…</translation>
    </message>
    <message>
        <location filename="../controllers/model.py" line="47"/>
        <source>Model: {name} · ready</source>
        <translation>Модель: {name} · готова</translation>
    </message>
    <message>
        <location filename="../controllers/model.py" line="48"/>
        <source>Model: {name} · failed to load</source>
        <translation>Модель: {name} · не загрузилась</translation>
    </message>
</context>
<context>
    <name>PdfViewer</name>
    <message>
        <location filename="../pdf_viewer.py" line="49"/>
        <source>Page</source>
        <translation>Страница</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="59"/>
        <source>Zoom out</source>
        <translation>Уменьшить</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="59"/>
        <source>Zoom in</source>
        <translation>Увеличить</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="65"/>
        <source>Fit width</source>
        <translation>По ширине</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="84"/>
        <source>{name} — Hearth</source>
        <translation>{name} — Hearth</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="86"/>
        <source>of {n}</source>
        <translation>из {n}</translation>
    </message>
    <message>
        <location filename="../pdf_viewer.py" line="121"/>
        <source>Passage highlighted</source>
        <translation>Фрагмент выделен</translation>
    </message>
</context>
<context>
    <name>QuoteRow</name>
    <message>
        <location filename="../chat.py" line="128"/>
        <source>Open {file} at this quote</source>
        <translation>Открыть {file} на этой цитате</translation>
    </message>
</context>
<context>
    <name>ScanViewer</name>
    <message>
        <location filename="../scan_viewer.py" line="93"/>
        <source>Open in its application</source>
        <translation>Открыть в приложении</translation>
    </message>
    <message>
        <location filename="../scan_viewer.py" line="94"/>
        <source>Open the original file in the application your system uses for it</source>
        <translation>Открыть исходный файл в приложении, которое система использует для него</translation>
    </message>
    <message>
        <location filename="../scan_viewer.py" line="117"/>
        <source>{name} — Hearth</source>
        <translation>{name} — Hearth</translation>
    </message>
    <message>
        <location filename="../scan_viewer.py" line="118"/>
        <source>Page {n}</source>
        <translation>Страница {n}</translation>
    </message>
    <message>
        <location filename="../scan_viewer.py" line="119"/>
        <source>Passage highlighted</source>
        <translation>Фрагмент выделен</translation>
    </message>
</context>
<context>
    <name>ScopeChip</name>
    <message>
        <location filename="../asking.py" line="33"/>
        <source>1 document: {names}</source>
        <translation>Документ: {names}</translation>
    </message>
    <message>
        <location filename="../asking.py" line="34"/>
        <source>{n} documents: {names}</source>
        <translation>Документов: {n} — {names}</translation>
    </message>
    <message>
        <location filename="../asking.py" line="58"/>
        <source>Ask about the whole workspace again (Esc)</source>
        <translation>Снова спрашивать по всему рабочему пространству (Esc)</translation>
    </message>
    <message>
        <location filename="../asking.py" line="70"/>
        <source>Questions are answered from these documents only:</source>
        <translation>Ответы даются только по этим документам:</translation>
    </message>
</context>
<context>
    <name>SearchedFor</name>
    <message>
        <location filename="../asking.py" line="99"/>
        <source>What was searched in your documents. Double-click to correct it.</source>
        <translation>Что искали в ваших документах. Дважды щёлкните, чтобы исправить.</translation>
    </message>
    <message>
        <location filename="../asking.py" line="103"/>
        <source>Enter searches again with this text; Esc leaves it as it was</source>
        <translation>Enter — искать заново по этому тексту; Esc — оставить как было</translation>
    </message>
    <message>
        <location filename="../asking.py" line="108"/>
        <source>Edit</source>
        <translation>Изменить</translation>
    </message>
    <message>
        <location filename="../asking.py" line="110"/>
        <source>Correct what is searched and ask again</source>
        <translation>Исправить запрос и спросить снова</translation>
    </message>
    <message>
        <location filename="../asking.py" line="120"/>
        <source>Searched for: {query}</source>
        <translation>Искали: {query}</translation>
    </message>
</context>
<context>
    <name>SettingsController</name>
    <message>
        <location filename="../controllers/settings.py" line="55"/>
        <source>API: {url}</source>
        <translation>API: {url}</translation>
    </message>
    <message>
        <location filename="../controllers/settings.py" line="56"/>
        <source> (key required)</source>
        <translation> (нужен ключ)</translation>
    </message>
    <message>
        <location filename="../controllers/settings.py" line="59"/>
        <source>The local API requires a key, also on this computer.</source>
        <translation>Локальный API требует ключ, в том числе на этом компьютере.</translation>
    </message>
    <message>
        <location filename="../controllers/settings.py" line="60"/>
        <source>Your key, shown only this once (apps send it as &apos;Authorization: Bearer KEY&apos;): {key}</source>
        <translation>Ваш ключ, он показывается только один раз (приложения передают его как &apos;Authorization: Bearer КЛЮЧ&apos;): {key}</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <location filename="../settings_dialog.py" line="41"/>
        <source>Settings</source>
        <translation>Настройки</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="51"/>
        <source>Loading the model library…</source>
        <translation>Загрузка библиотеки моделей…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="53"/>
        <source>Chat model</source>
        <translation>Модель для чата</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="57"/>
        <location filename="../settings_dialog.py" line="60"/>
        <source>{n} tokens</source>
        <translation>{n} токенов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="64"/>
        <source>Context size</source>
        <translation>Размер контекста</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="69"/>
        <location filename="../settings_dialog.py" line="246"/>
        <source>Automatic</source>
        <translation>Автоматически</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="70"/>
        <source>Manual:</source>
        <translation>Вручную:</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="86"/>
        <source>GPU layers</source>
        <translation>Слои на GPU</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="87"/>
        <source>llama.cpp engine</source>
        <translation>Движок llama.cpp</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="88"/>
        <location filename="../settings_dialog.py" line="212"/>
        <source>Working out the memory plan…</source>
        <translation>Рассчитываем план памяти…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="94"/>
        <source>The embedding model of new workspaces. A workspace whose documents it does not read can switch to a multilingual model from the library&apos;s notice, or with `hearth embedder use NAME --workspace W`.</source>
        <translation>Модель эмбеддингов для новых пространств. Пространство, документы которого она не понимает, можно перевести на многоязычную модель из уведомления в библиотеке или командой `hearth embedder use NAME --workspace W`.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="97"/>
        <source>Embedding model</source>
        <translation>Модель эмбеддингов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="102"/>
        <source> tokens</source>
        <translation> токенов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="104"/>
        <source>Passage size for documents indexed from now on; re-index to apply it to documents already indexed.</source>
        <translation>Размер фрагмента для документов, индексируемых с этого момента; чтобы применить к уже проиндексированным, переиндексируйте их.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="106"/>
        <source>Passage size</source>
        <translation>Размер фрагмента</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="108"/>
        <source>The chat model reads the best passages before answering</source>
        <translation>Перед ответом языковая модель читает лучшие фрагменты</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="110"/>
        <source>It puts the passage that answers first, which makes answers more often right. Without a GPU this takes some seconds a question; switch it off for faster answers.</source>
        <translation>Она ставит первым фрагмент, в котором есть ответ, и ответы чаще оказываются верными. Без видеокарты это занимает несколько секунд на вопрос; отключите, чтобы получать ответы быстрее.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="113"/>
        <source>Passage order</source>
        <translation>Порядок фрагментов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="116"/>
        <source>Say so</source>
        <translation>Сообщать об этом</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="116"/>
        <source>Say so when unsure</source>
        <translation>Сообщать, если ответ сомнителен</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="117"/>
        <source>Always show the model&apos;s answer</source>
        <translation>Всегда показывать ответ модели</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="120"/>
        <source>What Hearth does when your documents don&apos;t seem to answer a question: say so, and show the closest passages instead of the model&apos;s reply (which stays one click away).</source>
        <translation>Что делает Hearth, когда в ваших документах, похоже, нет ответа на вопрос: сообщает об этом и показывает самые близкие фрагменты вместо ответа модели (он остаётся доступен одним щелчком).</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="123"/>
        <source>When the documents don&apos;t answer</source>
        <translation>Если в документах нет ответа</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="130"/>
        <source>Choose…</source>
        <translation>Выбрать…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="133"/>
        <location filename="../settings_dialog.py" line="266"/>
        <source>Data folder</source>
        <translation>Папка данных</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="135"/>
        <source>Serve the local API on 127.0.0.1:8642</source>
        <translation>Локальный API на 127.0.0.1:8642</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="137"/>
        <source>OpenAI-compatible: other programs on this computer can ask your documents. Only this computer can connect.</source>
        <translation>Совместим с OpenAI: другие программы на этом компьютере могут задавать вопросы по вашим документам. Подключиться можно только с этого компьютера.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="139"/>
        <source>API server</source>
        <translation>API-сервер</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="143"/>
        <source>System</source>
        <translation>Как в системе</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="145"/>
        <source>Takes effect the next time Hearth starts.</source>
        <translation>Вступит в силу при следующем запуске Hearth.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="146"/>
        <source>Language</source>
        <translation>Язык</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="194"/>
        <source>(default)</source>
        <translation>(по умолчанию)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="196"/>
        <source>(unavailable)</source>
        <translation>(недоступна)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="224"/>
        <source>No plan for this model.</source>
        <translation>Для этой модели нет плана.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="228"/>
        <source>{layers} of {total} layers on the GPU · GPU {gpu} · RAM {ram}</source>
        <translation>слоёв на GPU: {layers} из {total} · GPU {gpu} · ОЗУ {ram}</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="231"/>
        <source>fits</source>
        <translation>помещается</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="231"/>
        <source>does not fit</source>
        <translation>не помещается</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="246"/>
        <source>CPU</source>
        <translation>Процессор</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="247"/>
        <source>Vulkan</source>
        <translation>Vulkan</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="247"/>
        <source>HIP (ROCm)</source>
        <translation>HIP (ROCm)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="249"/>
        <source>{engine} (not installed)</source>
        <translation>{engine} (не установлен)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="258"/>
        <source> Now running: {engine} ({reason}).</source>
        <translation> Сейчас работает: {engine} ({reason}).</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="260"/>
        <source>Which llama.cpp build runs the chat model: Automatic takes HIP where ROCm runs the GPU, else Vulkan on a GPU, else the CPU. Applies when Hearth starts again.</source>
        <translation>Какая сборка llama.cpp запускает чат-модель: «Автоматически» выбирает HIP, если ROCm работает с GPU, иначе Vulkan на GPU, иначе процессор. Вступает в силу при следующем запуске Hearth.</translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <location filename="../sidebar.py" line="42"/>
        <source>Workspaces</source>
        <translation>Пространства</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="47"/>
        <source>New workspace</source>
        <translation>Новое пространство</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="59"/>
        <source>Chats</source>
        <translation>Чаты</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="62"/>
        <source>New chat</source>
        <translation>Новый чат</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="63"/>
        <source>Start a new conversation (Ctrl+N)</source>
        <translation>Начать новый разговор (Ctrl+N)</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="85"/>
        <source>Command-line name: {name}</source>
        <translation>Имя в командной строке: {name}</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="122"/>
        <source>New workspace…</source>
        <translation>Новое пространство…</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="125"/>
        <source>Rename…</source>
        <translation>Переименовать…</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="126"/>
        <source>Delete…</source>
        <translation>Удалить…</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="137"/>
        <source>Export as Markdown…</source>
        <translation>Экспорт в Markdown…</translation>
    </message>
    <message>
        <location filename="../sidebar.py" line="138"/>
        <source>Delete</source>
        <translation>Удалить</translation>
    </message>
</context>
<context>
    <name>SourceController</name>
    <message>
        <location filename="../controllers/sources.py" line="117"/>
        <source>{name} is no longer at {folder}.</source>
        <translation>Файла {name} больше нет в {folder}.</translation>
    </message>
    <message>
        <location filename="../controllers/sources.py" line="118"/>
        <source>Re-index it from its new place, or remove it.</source>
        <translation>Проиндексируйте его на новом месте или уберите из библиотеки.</translation>
    </message>
    <message>
        <location filename="../controllers/sources.py" line="135"/>
        <source>Open in another application?</source>
        <translation>Открыть в другом приложении?</translation>
    </message>
    <message>
        <location filename="../controllers/sources.py" line="136"/>
        <source>Hearth could not read this document:

{path}

Open it in the application your system uses for it?</source>
        <translation>Hearth не смог прочитать этот документ:

{path}

Открыть его в приложении, которое система использует для таких файлов?</translation>
    </message>
    <message>
        <location filename="../controllers/sources.py" line="155"/>
        <source>Open link?</source>
        <translation>Открыть ссылку?</translation>
    </message>
    <message>
        <location filename="../controllers/sources.py" line="156"/>
        <source>The answer links to:

{url}

Open it outside Hearth?</source>
        <translation>Ответ ссылается на:

{url}

Открыть её вне Hearth?</translation>
    </message>
</context>
<context>
    <name>SourceRow</name>
    <message>
        <location filename="../chat.py" line="96"/>
        <source>Open {file}</source>
        <translation>Открыть {file}</translation>
    </message>
</context>
<context>
    <name>Summary</name>
    <message>
        <location filename="../asking.py" line="205"/>
        <source>Summarizing: putting the parts together…</source>
        <translation>Краткое содержание: свожу части вместе…</translation>
    </message>
    <message>
        <location filename="../asking.py" line="206"/>
        <source>Summarizing: {done} of {total} parts</source>
        <translation>Краткое содержание: частей {done} из {total}</translation>
    </message>
    <message>
        <location filename="../asking.py" line="209"/>
        <source>about {eta} left</source>
        <translation>осталось около {eta}</translation>
    </message>
    <message>
        <location filename="../asking.py" line="212"/>
        <source>reading “{section}”</source>
        <translation>читаю «{section}»</translation>
    </message>
</context>
<context>
    <name>TextViewer</name>
    <message>
        <location filename="../text_viewer.py" line="59"/>
        <source>The text Hearth read from this document</source>
        <translation>Текст, который Hearth прочитал из этого документа</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="64"/>
        <source>Open in its application</source>
        <translation>Открыть в приложении</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="65"/>
        <source>Open the original file in the application your system uses for it</source>
        <translation>Открыть исходный файл в приложении, которое система использует для него</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="85"/>
        <source>{name} — Hearth</source>
        <translation>{name} — Hearth</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="91"/>
        <source>The document changed since it was indexed: the passage is not in it now</source>
        <translation>Документ изменился после индексации: этого фрагмента в нём больше нет</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="110"/>
        <source>Quote highlighted</source>
        <translation>Цитата выделена</translation>
    </message>
</context>
<context>
    <name>TurnCard</name>
    <message>
        <location filename="../chat.py" line="195"/>
        <source>Copy</source>
        <translation>Копировать</translation>
    </message>
    <message>
        <location filename="../chat.py" line="196"/>
        <source>Copy the answer as Markdown</source>
        <translation>Скопировать ответ в формате Markdown</translation>
    </message>
    <message>
        <location filename="../chat.py" line="203"/>
        <source>Show the model&apos;s guess</source>
        <translation>Показать догадку модели</translation>
    </message>
    <message>
        <location filename="../chat.py" line="204"/>
        <source>What the model replied, though nothing in the documents bears it out</source>
        <translation>Что ответила модель, хотя документы этого не подтверждают</translation>
    </message>
    <message>
        <location filename="../chat.py" line="257"/>
        <source>**The model&apos;s guess, not found in your documents:**</source>
        <translation>**Догадка модели, в ваших документах этого нет:**</translation>
    </message>
    <message>
        <location filename="../chat.py" line="260"/>
        <source>*(not found in your documents)*</source>
        <translation>*(в ваших документах этого нет)*</translation>
    </message>
    <message>
        <location filename="../chat.py" line="317"/>
        <source>Rows used ({n}); click a header to sort, a row to open it</source>
        <translation>Использованные строки ({n}); щелчок по заголовку сортирует, по строке — открывает её</translation>
    </message>
    <message>
        <location filename="../chat.py" line="324"/>
        <source>Closest passages</source>
        <translation>Самые близкие фрагменты</translation>
    </message>
    <message>
        <location filename="../chat.py" line="325"/>
        <source>What the documents say</source>
        <translation>Что говорят документы</translation>
    </message>
    <message>
        <location filename="../chat.py" line="325"/>
        <source>Supporting quotes</source>
        <translation>Подтверждающие цитаты</translation>
    </message>
    <message>
        <location filename="../chat.py" line="333"/>
        <source>Sources</source>
        <translation>Источники</translation>
    </message>
    <message>
        <location filename="../chat.py" line="342"/>
        <source>Not found in your documents; the closest passages are shown.</source>
        <translation>В ваших документах ответа не нашлось; показаны самые близкие фрагменты.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="345"/>
        <source>The model&apos;s reply was not borne out by the documents; their own words are shown instead.</source>
        <translation>Ответ модели не подтверждается документами; вместо него показаны их собственные слова.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="348"/>
        <source>{seconds:.1f} s</source>
        <translation>{seconds:.1f} с</translation>
    </message>
    <message>
        <location filename="../chat.py" line="355"/>
        <location filename="../chat.py" line="356"/>
        <source>Stopped.</source>
        <translation>Остановлено.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="364"/>
        <source>No answer: {reason}</source>
        <translation>Нет ответа: {reason}</translation>
    </message>
</context>
<context>
    <name>WatchController</name>
    <message>
        <location filename="../controllers/watch.py" line="23"/>
        <source>Watch a folder</source>
        <translation>Отслеживать папку</translation>
    </message>
    <message>
        <location filename="../controllers/watch.py" line="58"/>
        <source>stopped: {reason}</source>
        <translation>остановлено: {reason}</translation>
    </message>
    <message>
        <location filename="../controllers/watch.py" line="69"/>
        <source>syncing… {done} of {total}</source>
        <translation>синхронизация… {done} из {total}</translation>
    </message>
    <message>
        <location filename="../controllers/watch.py" line="73"/>
        <source>in sync · {time}</source>
        <translation>синхронизировано · {time}</translation>
    </message>
    <message>
        <location filename="../controllers/watch.py" line="75"/>
        <source>{n} failed</source>
        <translation>с ошибкой: {n}</translation>
    </message>
</context>
<context>
    <name>WorkspaceController</name>
    <message>
        <location filename="../controllers/workspaces.py" line="67"/>
        <source>New workspace</source>
        <translation>Новое пространство</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="67"/>
        <source>Name:</source>
        <translation>Название:</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="84"/>
        <source>Rename workspace</source>
        <translation>Переименовать пространство</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="84"/>
        <source>Name shown:</source>
        <translation>Отображаемое название:</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="99"/>
        <source>Delete workspace</source>
        <translation>Удалить пространство</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="100"/>
        <source>Delete “{ws}”? Its documents leave the index (the files themselves stay where they are) and its chats are deleted.</source>
        <translation>Удалить «{ws}»? Его документы будут убраны из индекса (сами файлы останутся на месте), а его чаты — удалены.</translation>
    </message>
    <message>
        <location filename="../controllers/workspaces.py" line="124"/>
        <source>{ws} — Hearth</source>
        <translation>{ws} — Hearth</translation>
    </message>
</context>
</TS>
