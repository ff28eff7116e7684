<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ru_RU">
<context>
    <name>Banner</name>
    <message>
        <location filename="../widgets.py" line="33"/>
        <source>Dismiss</source>
        <translation>Закрыть</translation>
    </message>
    <message>
        <location filename="../widgets.py" line="52"/>
        <source>Open the log file</source>
        <translation>Открыть журнал</translation>
    </message>
</context>
<context>
    <name>Chat</name>
    <message>
        <location filename="../chat.py" line="55"/>
        <source>page {n}</source>
        <translation>стр. {n}</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <location filename="../chat.py" line="393"/>
        <source>Ask about your documents…  (Enter sends, Shift+Enter: new line)</source>
        <translation>Спросите о своих документах…  (Enter — отправить, Shift+Enter — новая строка)</translation>
    </message>
    <message>
        <location filename="../chat.py" line="396"/>
        <location filename="../chat.py" line="465"/>
        <source>Send</source>
        <translation>Отправить</translation>
    </message>
    <message>
        <location filename="../chat.py" line="421"/>
        <source>Answers come only from the documents in this workspace, with their sources. Drop files or folders anywhere on the window to add them.</source>
        <translation>Ответы берутся только из документов этого пространства, с указанием источников. Чтобы добавить файлы или папки, перетащите их в любое место окна.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="430"/>
        <source>Ask anything about the {n} documents in “{ws}”</source>
        <translation>Спросите что угодно о документах в «{ws}» ({n})</translation>
    </message>
    <message>
        <location filename="../chat.py" line="433"/>
        <source>“{ws}” has no documents yet</source>
        <translation>В «{ws}» пока нет документов</translation>
    </message>
    <message>
        <location filename="../chat.py" line="465"/>
        <source>Stop</source>
        <translation>Остановить</translation>
    </message>
    <message>
        <location filename="../chat.py" line="466"/>
        <source>Stop the answer (Esc)</source>
        <translation>Остановить ответ (Esc)</translation>
    </message>
    <message>
        <location filename="../chat.py" line="466"/>
        <source>Send (Enter)</source>
        <translation>Отправить (Enter)</translation>
    </message>
</context>
<context>
    <name>HardwarePanel</name>
    <message>
        <location filename="../hardware_panel.py" line="50"/>
        <source>Looking at this machine…</source>
        <translation>Изучаем этот компьютер…</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="75"/>
        <source>No GPU found: the models run on the CPU.</source>
        <translation>Видеокарта не найдена: модели работают на процессоре.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="86"/>
        <source>Hardware</source>
        <translation>Оборудование</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="89"/>
        <source>updated {time}</source>
        <translation>обновлено в {time}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="92"/>
        <source>Refresh</source>
        <translation>Обновить</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="102"/>
        <source>integrated GPU</source>
        <translation>встроенная видеокарта</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="102"/>
        <source>discrete GPU</source>
        <translation>дискретная видеокарта</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="104"/>
        <location filename="../hardware_panel.py" line="143"/>
        <source>driver {name}</source>
        <translation>драйвер {name}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="104"/>
        <location filename="../hardware_panel.py" line="143"/>
        <source>none</source>
        <translation>нет</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="106"/>
        <source>ROCm: yes</source>
        <translation>ROCm: да</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="106"/>
        <source>ROCm: no</source>
        <translation>ROCm: нет</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="112"/>
        <source>VRAM</source>
        <translation>VRAM</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="112"/>
        <source>GTT</source>
        <translation>GTT</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="120"/>
        <source>Models are loaded into this memory</source>
        <translation>Модели загружаются в эту память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="142"/>
        <source>NPU</source>
        <translation>NPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="152"/>
        <source>CPU</source>
        <translation>Процессор</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="153"/>
        <source>{cores} cores, {threads} threads</source>
        <translation>ядер: {cores}, потоков: {threads}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="162"/>
        <location filename="../hardware_panel.py" line="185"/>
        <source>RAM</source>
        <translation>ОЗУ</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="175"/>
        <source>Memory plan</source>
        <translation>План памяти</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="176"/>
        <source>No chat model chosen yet.</source>
        <translation>Модель для чата ещё не выбрана.</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="178"/>
        <source>Memory plan: {model}</source>
        <translation>План памяти: {model}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="179"/>
        <source>{ctx} tokens of context</source>
        <translation>контекст {ctx} токенов</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="182"/>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>weights</source>
        <translation>веса</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>KV cache</source>
        <translation>KV-кэш</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="190"/>
        <source>compute</source>
        <translation>вычисления</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="191"/>
        <source>embedder</source>
        <translation>эмбеддер</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="198"/>
        <source>Layers on the GPU: {planned} of {total} planned</source>
        <translation>Слоёв на GPU: по плану {planned} из {total}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="200"/>
        <source>{n} in use</source>
        <translation>фактически {n}</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="201"/>
        <source>model not loaded yet</source>
        <translation>модель ещё не загружена</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="204"/>
        <source>Fits in memory</source>
        <translation>Помещается в память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="204"/>
        <source>Does not fit in memory</source>
        <translation>Не помещается в память</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="225"/>
        <source>{need} of {free} free</source>
        <translation>{need} из {free} свободных</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="232"/>
        <source>Runtimes</source>
        <translation>Среды выполнения</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="238"/>
        <location filename="../hardware_panel.py" line="246"/>
        <source>not installed</source>
        <translation>не установлено</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="240"/>
        <source>CPU only</source>
        <translation>только процессор</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="249"/>
        <source>no working provider</source>
        <translation>нет рабочего провайдера</translation>
    </message>
    <message>
        <location filename="../hardware_panel.py" line="270"/>
        <source>Checks</source>
        <translation>Проверки</translation>
    </message>
</context>
<context>
    <name>LibraryPanel</name>
    <message>
        <location filename="../library.py" line="59"/>
        <source>Add files…</source>
        <translation>Добавить файлы…</translation>
    </message>
    <message>
        <location filename="../library.py" line="60"/>
        <source>Add documents to this workspace (Ctrl+O)</source>
        <translation>Добавить документы в это пространство (Ctrl+O)</translation>
    </message>
    <message>
        <location filename="../library.py" line="63"/>
        <source>Add folder…</source>
        <translation>Добавить папку…</translation>
    </message>
    <message>
        <location filename="../library.py" line="69"/>
        <source>More actions for the selected documents</source>
        <translation>Другие действия с выбранными документами</translation>
    </message>
    <message>
        <location filename="../library.py" line="87"/>
        <source>Cancel</source>
        <translation>Отмена</translation>
    </message>
    <message>
        <location filename="../library.py" line="88"/>
        <source>Stop indexing; the documents done so far are kept</source>
        <translation>Остановить индексацию; уже обработанные документы сохранятся</translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Document</source>
        <translation>Документ</translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Status</source>
        <translation>Состояние</translation>
    </message>
    <message>
        <location filename="../library.py" line="99"/>
        <source>Passages</source>
        <translation>Фрагменты</translation>
    </message>
    <message>
        <location filename="../library.py" line="121"/>
        <source>Watched folders</source>
        <translation>Отслеживаемые папки</translation>
    </message>
    <message>
        <location filename="../library.py" line="123"/>
        <source>Watch a folder…</source>
        <translation>Отслеживать папку…</translation>
    </message>
    <message>
        <location filename="../library.py" line="124"/>
        <source>Keep a folder in sync: new, changed and deleted files are picked up by themselves</source>
        <translation>Синхронизировать папку: новые, изменённые и удалённые файлы учитываются сами</translation>
    </message>
    <message>
        <location filename="../library.py" line="140"/>
        <source>None: documents are indexed when you add them.</source>
        <translation>Нет: документы индексируются, когда вы их добавляете.</translation>
    </message>
    <message>
        <location filename="../library.py" line="143"/>
        <source>Drop files or folders anywhere on the window to add them; drop a .gguf file to add a chat model.</source>
        <translation>Перетащите файлы или папки в любое место окна, чтобы добавить их; файл .gguf добавляет модель для чата.</translation>
    </message>
    <message>
        <location filename="../library.py" line="150"/>
        <source>Open</source>
        <translation>Открыть</translation>
    </message>
    <message>
        <location filename="../library.py" line="152"/>
        <source>Re-index</source>
        <translation>Переиндексировать</translation>
    </message>
    <message>
        <location filename="../library.py" line="154"/>
        <source>Remove from the library</source>
        <translation>Убрать из библиотеки</translation>
    </message>
    <message>
        <location filename="../library.py" line="165"/>
        <source>starting…</source>
        <translation>запуск…</translation>
    </message>
    <message>
        <location filename="../library.py" line="192"/>
        <source>Open folder</source>
        <translation>Открыть папку</translation>
    </message>
    <message>
        <location filename="../library.py" line="193"/>
        <source>Stop watching</source>
        <translation>Не отслеживать</translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>queued</source>
        <translation>в очереди</translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>reading…</source>
        <translation>чтение…</translation>
    </message>
    <message>
        <location filename="../library.py" line="203"/>
        <source>embedding…</source>
        <translation>векторизация…</translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>done</source>
        <translation>готово</translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>failed</source>
        <translation>ошибка</translation>
    </message>
    <message>
        <location filename="../library.py" line="204"/>
        <source>not indexed (stopped)</source>
        <translation>не проиндексирован (остановлено)</translation>
    </message>
    <message>
        <location filename="../library.py" line="205"/>
        <source>interrupted, will be redone</source>
        <translation>прервано, будет повторено</translation>
    </message>
    <message>
        <location filename="../library.py" line="245"/>
        <source>Looking for documents…</source>
        <translation>Поиск документов…</translation>
    </message>
    <message>
        <location filename="../library.py" line="282"/>
        <source>Indexing stopped.</source>
        <translation>Индексация остановлена.</translation>
    </message>
    <message>
        <location filename="../library.py" line="283"/>
        <source>The documents indexed so far are kept; add the rest again to go on.</source>
        <translation>Уже проиндексированные документы сохранены; чтобы продолжить, добавьте остальные ещё раз.</translation>
    </message>
    <message>
        <location filename="../library.py" line="287"/>
        <source>{n} of the documents could not be read.</source>
        <translation>Не удалось прочитать документов: {n}.</translation>
    </message>
    <message>
        <location filename="../library.py" line="288"/>
        <source>Each one&apos;s reason is in its row (hover for the full text).</source>
        <translation>Причина указана в строке каждого (наведите курсор, чтобы увидеть полный текст).</translation>
    </message>
    <message>
        <location filename="../library.py" line="295"/>
        <source>{done} of {total} files · {chunks} passages</source>
        <translation>{done} из {total} файлов · фрагментов: {chunks}</translation>
    </message>
    <message>
        <location filename="../library.py" line="302"/>
        <source>{rate:.0f} passages/s · about {eta} left</source>
        <translation>{rate:.0f} фрагм./с · осталось около {eta}</translation>
    </message>
    <message>
        <source>{rate:.1f} files/s · about {eta} left</source>
        <translation type="vanished">{rate:.1f} файл/с · осталось около {eta}</translation>
    </message>
    <message>
        <location filename="../library.py" line="324"/>
        <source>{n} pages</source>
        <translation>страниц: {n}</translation>
    </message>
    <message>
        <location filename="../library.py" line="339"/>
        <source>No documents yet.</source>
        <translation>Документов пока нет.</translation>
    </message>
    <message>
        <location filename="../library.py" line="341"/>
        <source>{n} documents · {chunks} passages</source>
        <translation>документов: {n} · фрагментов: {chunks}</translation>
    </message>
    <message>
        <location filename="../library.py" line="343"/>
        <source>{n} failed</source>
        <translation>с ошибкой: {n}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../main_window.py" line="78"/>
        <location filename="../main_window.py" line="200"/>
        <source>Library</source>
        <translation>Библиотека</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="79"/>
        <location filename="../main_window.py" line="201"/>
        <source>Hardware</source>
        <translation>Оборудование</translation>
    </message>
    <message>
        <source>default model</source>
        <translation type="vanished">модель по умолчанию</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="168"/>
        <source>Model: {name}</source>
        <translation>Модель: {name}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="169"/>
        <source>Loading {name}…</source>
        <translation>Загрузка: {name}…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="170"/>
        <source>Model: {name} · ready</source>
        <translation>Модель: {name} · готова</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="171"/>
        <source>Model: {name} · failed to load</source>
        <translation>Модель: {name} · не загрузилась</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="180"/>
        <source>&amp;File</source>
        <translation>&amp;Файл</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="181"/>
        <source>Add files…</source>
        <translation>Добавить файлы…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="182"/>
        <source>Add folder…</source>
        <translation>Добавить папку…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="183"/>
        <source>Watch a folder…</source>
        <translation>Отслеживать папку…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="185"/>
        <source>New workspace…</source>
        <translation>Новое пространство…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="187"/>
        <source>Settings…</source>
        <translation>Настройки…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="189"/>
        <source>Quit</source>
        <translation>Выход</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="190"/>
        <source>&amp;Chat</source>
        <translation>&amp;Чат</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="191"/>
        <source>New chat</source>
        <translation>Новый чат</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="192"/>
        <source>Stop</source>
        <translation>Остановить</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="194"/>
        <source>Export chat…</source>
        <translation>Экспорт чата…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="196"/>
        <source>&amp;View</source>
        <translation>&amp;Вид</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="197"/>
        <source>Side panel</source>
        <translation>Боковая панель</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="202"/>
        <source>&amp;Help</source>
        <translation>&amp;Справка</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="203"/>
        <source>Open log file</source>
        <translation>Открыть журнал</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="204"/>
        <source>Open data folder</source>
        <translation>Открыть папку данных</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="206"/>
        <location filename="../main_window.py" line="807"/>
        <source>About Hearth</source>
        <translation>О программе Hearth</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="252"/>
        <source>New workspace</source>
        <translation>Новое пространство</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="252"/>
        <source>Name:</source>
        <translation>Название:</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="269"/>
        <source>Rename workspace</source>
        <translation>Переименовать пространство</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="269"/>
        <source>Name shown:</source>
        <translation>Отображаемое название:</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="285"/>
        <source>Delete workspace</source>
        <translation>Удалить пространство</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="286"/>
        <source>Delete “{ws}”? Its documents leave the index (the files themselves stay where they are) and its chats are deleted.</source>
        <translation>Удалить «{ws}»? Его документы будут убраны из индекса (сами файлы останутся на месте), а его чаты — удалены.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="313"/>
        <source>{ws} — Hearth</source>
        <translation>{ws} — Hearth</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="332"/>
        <source>Add documents</source>
        <translation>Добавить документы</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="338"/>
        <source>Add a folder</source>
        <translation>Добавить папку</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="382"/>
        <source>Indexed {n} documents ({chunks} passages) in {s:.1f} s; {u} unchanged, {f} failed.</source>
        <translation>Проиндексировано документов: {n} (фрагментов: {chunks}) за {s:.1f} с; без изменений: {u}, с ошибкой: {f}.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="397"/>
        <source>Stopping after the current document…</source>
        <translation>Остановка после текущего документа…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="402"/>
        <source>Watch a folder</source>
        <translation>Отслеживать папку</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="436"/>
        <source>stopped: {reason}</source>
        <translation>остановлено: {reason}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="446"/>
        <source>syncing… {done} of {total}</source>
        <translation>синхронизация… {done} из {total}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="450"/>
        <source>in sync · {time}</source>
        <translation>синхронизировано · {time}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="452"/>
        <source>{n} failed</source>
        <translation>с ошибкой: {n}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="462"/>
        <source>Remove documents</source>
        <translation>Убрать документы</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="463"/>
        <source>Remove {names} from the library? The files themselves are not deleted.</source>
        <translation>Убрать {names} из библиотеки? Сами файлы не удаляются.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="476"/>
        <source>Adding the model {name}…</source>
        <translation>Добавление модели {name}…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="479"/>
        <source>Adding the model {name}… {pct:.0f}%</source>
        <translation>Добавление модели {name}… {pct:.0f}%</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="483"/>
        <source>{name} is now in the model library.</source>
        <translation>Модель {name} добавлена в библиотеку моделей.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="484"/>
        <source>Choose it as the chat model in Settings (Ctrl+,).</source>
        <translation>Выберите её как модель для чата в настройках (Ctrl+,).</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="531"/>
        <source>Export chat</source>
        <translation>Экспорт чата</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="532"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="537"/>
        <source>Saved {path}</source>
        <translation>Сохранено: {path}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="559"/>
        <source>Waiting for the model to load…</source>
        <translation>Ждём загрузки модели…</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="606"/>
        <source>Stopped.</source>
        <translation>Остановлено.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="661"/>
        <source>{name} is no longer at {folder}.</source>
        <translation>Файла {name} больше нет в {folder}.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="662"/>
        <source>Re-index it from its new place, or remove it.</source>
        <translation>Проиндексируйте его на новом месте или уберите из библиотеки.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="780"/>
        <source>API: {url}</source>
        <translation>API: {url}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="781"/>
        <source> (key required)</source>
        <translation> (нужен ключ)</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="784"/>
        <source>Your administrator requires a key for the local API, also on this computer.</source>
        <translation>Администратор требует ключ для локального API, в том числе на этом компьютере.</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="785"/>
        <source>Your key, shown only this once (apps send it as &apos;Authorization: Bearer KEY&apos;): {key}</source>
        <translation>Ваш ключ, он показывается только один раз (приложения передают его как &apos;Authorization: Bearer КЛЮЧ&apos;): {key}</translation>
    </message>
    <message>
        <location filename="../main_window.py" line="808"/>
        <source>&lt;b&gt;Hearth&lt;/b&gt;&lt;br&gt;Private, offline answers from your own documents.&lt;br&gt;Nothing leaves this computer.</source>
        <translation>&lt;b&gt;Hearth&lt;/b&gt;&lt;br&gt;Частные ответы по вашим документам без интернета.&lt;br&gt;Ничто не покидает этот компьютер.</translation>
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
        <location filename="../chat.py" line="164"/>
        <source>Open {file} at this quote</source>
        <translation>Открыть {file} на этой цитате</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <location filename="../settings_dialog.py" line="40"/>
        <source>Settings</source>
        <translation>Настройки</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="50"/>
        <source>Loading the model library…</source>
        <translation>Загрузка библиотеки моделей…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="52"/>
        <source>Chat model</source>
        <translation>Модель для чата</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="56"/>
        <location filename="../settings_dialog.py" line="59"/>
        <source>{n} tokens</source>
        <translation>{n} токенов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="63"/>
        <source>Context size</source>
        <translation>Размер контекста</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="68"/>
        <source>Automatic</source>
        <translation>Автоматически</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="69"/>
        <source>Manual:</source>
        <translation>Вручную:</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="85"/>
        <source>GPU layers</source>
        <translation>Слои на GPU</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="86"/>
        <location filename="../settings_dialog.py" line="191"/>
        <source>Working out the memory plan…</source>
        <translation>Рассчитываем план памяти…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="92"/>
        <source>The built-in embedding model; others can be added in a later version.</source>
        <translation>Встроенная модель эмбеддингов; другие можно будет добавить в следующих версиях.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="93"/>
        <source>Embedding model</source>
        <translation>Модель эмбеддингов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="98"/>
        <source> tokens</source>
        <translation> токенов</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="100"/>
        <source>Passage size for documents indexed from now on; re-index to apply it to documents already indexed.</source>
        <translation>Размер фрагмента для документов, индексируемых с этого момента; чтобы применить к уже проиндексированным, переиндексируйте их.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="102"/>
        <source>Passage size</source>
        <translation>Размер фрагмента</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="109"/>
        <source>Choose…</source>
        <translation>Выбрать…</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="112"/>
        <location filename="../settings_dialog.py" line="219"/>
        <source>Data folder</source>
        <translation>Папка данных</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="114"/>
        <source>Serve the local API on 127.0.0.1:8642</source>
        <translation>Локальный API на 127.0.0.1:8642</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="116"/>
        <source>OpenAI-compatible: other programs on this computer can ask your documents. Only this computer can connect.</source>
        <translation>Совместим с OpenAI: другие программы на этом компьютере могут задавать вопросы по вашим документам. Подключиться можно только с этого компьютера.</translation>
    </message>
    <message>
        <source>The local API is not part of this version yet.</source>
        <translation type="vanished">Локального API в этой версии пока нет.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="118"/>
        <source>API server</source>
        <translation>API-сервер</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="122"/>
        <source>System</source>
        <translation>Как в системе</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="124"/>
        <source>Takes effect the next time Hearth starts.</source>
        <translation>Вступит в силу при следующем запуске Hearth.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="125"/>
        <source>Language</source>
        <translation>Язык</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="173"/>
        <source>(default)</source>
        <translation>(по умолчанию)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="175"/>
        <source>(unavailable)</source>
        <translation>(недоступна)</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="203"/>
        <source>No plan for this model.</source>
        <translation>Для этой модели нет плана.</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="207"/>
        <source>{layers} of {total} layers on the GPU · GPU {gpu} · RAM {ram}</source>
        <translation>слоёв на GPU: {layers} из {total} · GPU {gpu} · ОЗУ {ram}</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="210"/>
        <source>fits</source>
        <translation>помещается</translation>
    </message>
    <message>
        <location filename="../settings_dialog.py" line="210"/>
        <source>does not fit</source>
        <translation>не помещается</translation>
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
    <name>SourceRow</name>
    <message>
        <location filename="../chat.py" line="136"/>
        <source>Open {file}</source>
        <translation>Открыть {file}</translation>
    </message>
</context>
<context>
    <name>TextViewer</name>
    <message>
        <location filename="../text_viewer.py" line="58"/>
        <source>The text Hearth read from this document</source>
        <translation>Текст, который Hearth прочитал из этого документа</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="63"/>
        <source>Open in its application</source>
        <translation>Открыть в приложении</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="64"/>
        <source>Open the original file in the application your system uses for it</source>
        <translation>Открыть исходный файл в приложении, которое система использует для него</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="84"/>
        <source>{name} — Hearth</source>
        <translation>{name} — Hearth</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="90"/>
        <source>The document changed since it was indexed: the passage is not in it now</source>
        <translation>Документ изменился после индексации: этого фрагмента в нём больше нет</translation>
    </message>
    <message>
        <location filename="../text_viewer.py" line="109"/>
        <source>Quote highlighted</source>
        <translation>Цитата выделена</translation>
    </message>
</context>
<context>
    <name>TurnCard</name>
    <message>
        <location filename="../chat.py" line="218"/>
        <source>Copy</source>
        <translation>Копировать</translation>
    </message>
    <message>
        <location filename="../chat.py" line="219"/>
        <source>Copy the answer as Markdown</source>
        <translation>Скопировать ответ в формате Markdown</translation>
    </message>
    <message>
        <location filename="../chat.py" line="254"/>
        <source>*(not found in your documents)*</source>
        <translation>*(в ваших документах этого нет)*</translation>
    </message>
    <message>
        <location filename="../chat.py" line="270"/>
        <source>What the documents say</source>
        <translation>Что говорят документы</translation>
    </message>
    <message>
        <location filename="../chat.py" line="271"/>
        <source>Supporting quotes</source>
        <translation>Подтверждающие цитаты</translation>
    </message>
    <message>
        <location filename="../chat.py" line="277"/>
        <source>Sources</source>
        <translation>Источники</translation>
    </message>
    <message>
        <location filename="../chat.py" line="285"/>
        <source>The model&apos;s reply was not borne out by the documents; their own words are shown instead.</source>
        <translation>Ответ модели не подтверждается документами; вместо него показаны их собственные слова.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="288"/>
        <source>{seconds:.1f} s</source>
        <translation>{seconds:.1f} с</translation>
    </message>
    <message>
        <location filename="../chat.py" line="294"/>
        <location filename="../chat.py" line="295"/>
        <source>Stopped.</source>
        <translation>Остановлено.</translation>
    </message>
    <message>
        <location filename="../chat.py" line="302"/>
        <source>No answer: {reason}</source>
        <translation>Нет ответа: {reason}</translation>
    </message>
</context>
</TS>
