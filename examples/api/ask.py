from openai import OpenAI

client = OpenAI(base_url="http://127.0.0.1:8787/v1", api_key="change-me")
question = {"role": "user", "content": "How many phases has a loop?"}
answer = client.chat.completions.create(model="loopengine-simple", messages=[question])
print(answer.choices[0].message.content)
