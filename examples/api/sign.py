import base64
import hashlib
import hmac
import json
import os
import time
import urllib.request
import uuid

key = base64.b64decode(os.environ["DEPLOY_HOOK_SECRET"].removeprefix("whsec_"))
body = json.dumps({"service": "api", "version": "1.4.2"}).encode()
sent_id, sent_at = f"msg_{uuid.uuid4().hex}", str(int(time.time()))
mac = hmac.digest(key, f"{sent_id}.{sent_at}.".encode() + body, hashlib.sha256)
headers = {
    "webhook-id": sent_id,
    "webhook-timestamp": sent_at,
    "webhook-signature": "v1," + base64.b64encode(mac).decode(),
}
request = urllib.request.Request("http://127.0.0.1:8787/hooks/deploys", body, headers)
print(urllib.request.urlopen(request).read().decode())
